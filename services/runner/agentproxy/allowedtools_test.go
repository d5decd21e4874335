package agentproxy_test

import (
	"slices"
	"testing"

	"github.com/factline/factline/services/runner/agentproxy"
)

// A Chat Completions or Responses tool_choice of type allowed_tools (the
// openai node client 7.60.0 types it on both wires: a mode, auto or
// required, over a subset of the request's tools) is taken as the model
// is asked: the tools it allows are the ones offered, with its mode. The
// endpoint refused it ("tool_choice.type: \"allowed_tools\" is not
// supported (function): the endpoint offers function tools only", 400),
// and the agent, whose first call forced its bash tool this way, failed
// at once. The requests are that agent's, as it sent them.
func TestAllowedToolsToolChoiceIsTaken(t *testing.T) {
	for _, c := range []struct{ file, path string }{
		{"openai-node-chat-allowed-tools.json", agentproxy.ChatPath},
		{"openai-node-responses-allowed-tools.json", agentproxy.ResponsesPath},
	} {
		t.Run(c.file, func(t *testing.T) {
			for i, req := range replayDemands(t, c.file, c.path) {
				names := []string{}
				for _, tool := range req.Tools {
					names = append(names, tool.Name)
				}
				if tc := compactJSON(t, req.ToolChoice); tc != `{"mode":"required"}` || !slices.Equal(names, []string{"bash"}) {
					t.Errorf("request %d: tool choice %s over tools %v; want {\"mode\":\"required\"} over [bash]", i, tc, names)
				}
			}
		})
	}
}
