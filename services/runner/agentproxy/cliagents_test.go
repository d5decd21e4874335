package agentproxy_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/agentproxy"
)

// The requests of the coding-agent CLIs a third trial ran through the
// endpoint, as each sent them (recorded by a relay between the agent and
// its attempt's endpoint), each its last call of a run whose script made
// the agent say something beside two parallel calls, then call its tools
// again: pi 0.73.1 with a reasoning model on Messages (thinking, its
// tools' eager_input_streaming) and on Responses (a developer message,
// reasoning, include, prompt_cache_key, its text as an output_text message
// item before its function_call items), Crush (built from source,
// 2026-08-21: tool_choice with disable_parallel_tool_use, cache_control),
// cline 3.0.65 (the AI SDK's anthropic provider under bun) and Continue
// CLI 1.5.47 on Messages. Each is taken, whole and streamed, as the whole
// history it is: every call and every result, paired, the non-ASCII text
// intact. They were answered right when recorded; this keeps them so.
func TestCodingAgentCLIRequestsAreTakenWhole(t *testing.T) {
	for _, c := range []struct {
		file, path                     string
		system, user, assistant, tools int
		calls                          int
	}{
		{"pi-anthropic-turn4.json", agentproxy.MessagesPath, 1, 1, 3, 5, 5},
		{"pi-responses-turn4.json", agentproxy.ResponsesPath, 1, 1, 3, 5, 5},
		{"crush-anthropic-turn5.json", agentproxy.MessagesPath, 1, 1, 3, 4, 4},
		{"cline-anthropic-turn4.json", agentproxy.MessagesPath, 1, 1, 3, 4, 4},
		{"continue-anthropic-turn3.json", agentproxy.MessagesPath, 1, 1, 2, 3, 3},
	} {
		t.Run(c.file, func(t *testing.T) {
			body, err := os.ReadFile("testdata/sdk/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			var got []models.Request
			s := start(t, func(_ context.Context, req models.Request) (models.Reply, error) {
				got = append(got, req)
				return models.Reply{Text: "answer.txt now holds 4 and ./check.sh passes.", Finish: models.FinishStop,
					Usage: &models.Usage{InputTokens: 7, OutputTokens: 3}}, nil
			})
			for _, stream := range []bool{false, true} {
				if n := len(sdkExchange(t, s, c.path, body, stream)); n == 0 {
					t.Fatalf("stream=%v: nothing answered", stream)
				}
			}
			if len(got) != 2 {
				t.Fatalf("%d calls reached the attempt, want 2", len(got))
			}
			for i, req := range got {
				roles := map[models.Role]int{}
				calls, answered, text := 0, map[string]bool{}, false
				for _, m := range req.Messages {
					roles[m.Role]++
					calls += len(m.ToolCalls)
					for _, tc := range m.ToolCalls {
						answered[tc.ID] = false
					}
					if m.Role == models.RoleTool {
						if _, ok := answered[m.ToolCallID]; !ok {
							t.Errorf("request %d: tool message answers %q, no call made before it", i, m.ToolCallID)
						}
						answered[m.ToolCallID] = true
					}
					if m.Role == models.RoleAssistant && strings.Contains(m.Content, "ünïcödé ✓") {
						text = true
					}
				}
				if roles[models.RoleSystem] != c.system || roles[models.RoleUser] != c.user || roles[models.RoleAssistant] != c.assistant || roles[models.RoleTool] != c.tools || calls != c.calls {
					t.Errorf("request %d: %v messages by role and %d calls; want system %d, user %d, assistant %d, tool %d and %d calls",
						i, roles, calls, c.system, c.user, c.assistant, c.tools, c.calls)
				}
				for id, ok := range answered {
					if !ok {
						t.Errorf("request %d: call %q answered by no tool message", i, id)
					}
				}
				if !text {
					t.Errorf("request %d: the assistant's text beside its calls (\"… ünïcödé ✓.\") is lost", i)
				}
				if len(req.Tools) == 0 {
					t.Errorf("request %d: no tools offered", i)
				}
			}
		})
	}
}
