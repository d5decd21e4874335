package agentproxy_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/agentproxy"
)

// replayDemands posts the SDK request in testdata/sdk/file to path, whole
// and streamed, and returns the two requests the attempt was called with.
func replayDemands(t *testing.T, file, path string) []models.Request {
	t.Helper()
	body, err := os.ReadFile("testdata/sdk/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var got []models.Request
	s := start(t, func(_ context.Context, req models.Request) (models.Reply, error) {
		got = append(got, req)
		return models.Reply{Text: `{"passes":true,"summary":"answer.txt holds 4"}`, Finish: models.FinishStop,
			Usage: &models.Usage{InputTokens: 7, OutputTokens: 3}}, nil
	})
	for _, stream := range []bool{false, true} {
		if n := len(sdkExchange(t, s, path, body, stream)); n == 0 {
			t.Fatalf("stream=%v: nothing answered", stream)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d calls reached the attempt, want 2", len(got))
	}
	return got
}

// compactJSON is v as compact JSON, "" for nil.
func compactJSON(t *testing.T, v any) string {
	t.Helper()
	if v == nil || (v == (*models.ToolChoice)(nil)) {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The structured-output and tool-choice demands of the agent SDKs an eval
// team writes with, as each SDK sent them through `factline run` (recorded
// by a relay between the agent and its attempt's endpoint; the agents
// parsed the scripted model's answers): the OpenAI Agents SDK for JS
// (@openai/agents 0.20.0) with an outputType and modelSettings.toolChoice
// on Chat Completions and on Responses; the openai node client (7.60.0)
// with responses.parse and zodTextFormat; the Vercel AI SDK (ai 6.0.333)
// with Output.object and a forced toolChoice on @ai-sdk/openai's chat
// model (3.0.141) and on @ai-sdk/anthropic (3.0.140) for a model it knows
// takes structured output (output_config.format) and for one it does not
// (its "json" tool forced with tool_choice any); @anthropic-ai/sdk
// (1.17.0) forcing a tool and with messages.parse and zodOutputFormat;
// the AI SDK's Output.json() on Chat and Responses (JSON mode).
// Each reaches the model, whole and streamed, as the tool choice and
// output the SDK asked for.
func TestSDKStructuredOutputDemandsReachTheModel(t *testing.T) {
	const verdict = `"properties":{"passes":{"type":"boolean"},"summary":{"type":"string"}},"required":["passes","summary"]`
	for _, c := range []struct {
		file, path     string
		toolChoice     string
		kind, name     string
		schemaHas      string
		strict         bool
		tools, history int
	}{
		{"openai-agents-chat-output-type.json", agentproxy.ChatPath, `{"mode":"tool","name":"bash"}`, "json_schema", "output", verdict, true, 1, 2},
		{"openai-agents-responses-output-type.json", agentproxy.ResponsesPath, `{"mode":"tool","name":"bash"}`, "json_schema", "output", verdict, true, 1, 2},
		{"openai-node-responses-parse.json", agentproxy.ResponsesPath, `{"mode":"auto"}`, "json_schema", "verdict", verdict, true, 1, 5},
		{"vercel-chat-output-object.json", agentproxy.ChatPath, `{"mode":"tool","name":"bash"}`, "json_schema", "response", verdict, true, 1, 2},
		{"vercel-anthropic-output-config.json", agentproxy.MessagesPath, `{"mode":"tool","name":"bash"}`, "json_schema", "", verdict, false, 1, 2},
		{"vercel-anthropic-json-tool.json", agentproxy.MessagesPath, `{"mode":"required"}`, "", "", "", false, 2, 5},
		{"anthropic-sdk-anthropic-tool-choice-tool.json", agentproxy.MessagesPath, `{"mode":"tool","name":"verdict"}`, "", "", "", false, 2, 5},
		{"anthropic-sdk-anthropic-output-config.json", agentproxy.MessagesPath, ``, "json_schema", "", `"path"`, false, 0, 1},
		{"vercel-chat-output-json.json", agentproxy.ChatPath, ``, "json_object", "", "", false, 0, 1},
		{"vercel-responses-output-json.json", agentproxy.ResponsesPath, ``, "json_object", "", "", false, 0, 1},
	} {
		t.Run(c.file, func(t *testing.T) {
			for i, req := range replayDemands(t, c.file, c.path) {
				if tc := compactJSON(t, req.ToolChoice); tc != c.toolChoice {
					t.Errorf("request %d: tool choice %s, want %s", i, tc, c.toolChoice)
				}
				switch {
				case c.kind == "" && req.Output != nil:
					t.Errorf("request %d: output %s, want none", i, compactJSON(t, req.Output))
				case c.kind != "" && req.Output == nil:
					t.Errorf("request %d: no output, want %s", i, c.kind)
				case c.kind != "":
					o := req.Output
					if string(o.Kind) != c.kind || o.Name != c.name || o.Strict != c.strict || !strings.Contains(string(o.Schema), c.schemaHas) {
						t.Errorf("request %d: output %s; want kind %s, name %q, strict %v, a schema holding %s", i, compactJSON(t, o), c.kind, c.name, c.strict, c.schemaHas)
					}
					if err := o.Check(); err != nil {
						t.Errorf("request %d: output %s is not one a provider takes: %v", i, compactJSON(t, o), err)
					}
				}
				if req.ToolChoice != nil {
					if err := req.ToolChoice.Check(req.Tools); err != nil {
						t.Errorf("request %d: tool choice %s is not one a provider takes: %v", i, compactJSON(t, req.ToolChoice), err)
					}
				}
				if len(req.Tools) != c.tools || len(req.Messages) != c.history {
					t.Errorf("request %d: %d tools and %d messages, want %d and %d", i, len(req.Tools), len(req.Messages), c.tools, c.history)
				}
			}
		})
	}
}
