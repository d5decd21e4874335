package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/factline/factline/models"
)

// sentFields returns the named top-level fields of a body the fake server
// received, as compact JSON ("" for a field that is absent).
func sentFields(t *testing.T, body []byte, names ...string) map[string]string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("sent body is not a JSON object: %v\n%s", err, body)
	}
	out := map[string]string{}
	for _, n := range names {
		out[n] = string(top[n])
	}
	return out
}

// A request's tool choice and output format reach the Chat Completions
// wire as tool_choice and response_format, in the body Complete sends.
func TestToolChoiceAndOutputAreSent(t *testing.T) {
	tools := []models.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	cases := map[string]struct {
		choice           *models.ToolChoice
		output           *models.Output
		wantTC, wantResp string
	}{
		"forced tool and json schema": {&models.ToolChoice{Mode: models.ToolChoiceTool, Name: "f"},
			&models.Output{Kind: models.OutputJSONSchema, Name: "verdict", Description: "the verdict", Schema: schema, Strict: true},
			`{"function":{"name":"f"},"type":"function"}`,
			`{"json_schema":{"name":"verdict","strict":true,"description":"the verdict","schema":{"properties":{"answer":{"type":"string"}},"required":["answer"],"type":"object"}},"type":"json_schema"}`},
		"none and json object": {&models.ToolChoice{Mode: models.ToolChoiceNone}, &models.Output{Kind: models.OutputJSONObject},
			`"none"`, `{"type":"json_object"}`},
		"required and text": {&models.ToolChoice{Mode: models.ToolChoiceRequired}, &models.Output{Kind: models.OutputText},
			`"required"`, `{"type":"text"}`},
		"auto": {&models.ToolChoice{Mode: models.ToolChoiceAuto}, nil, `"auto"`, ``},
		"json schema without a name": {nil, &models.Output{Kind: models.OutputJSONSchema, Schema: schema},
			``, `{"json_schema":{"name":"output","schema":{"properties":{"answer":{"type":"string"}},"required":["answer"],"type":"object"}},"type":"json_schema"}`},
		"neither":  {nil, nil, ``, ``},
		"no tools": {&models.ToolChoice{Mode: models.ToolChoiceAuto}, nil, ``, ``},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, reply{body: textReply})
			m, _ := newModel(t, s, Config{})
			req := simpleRequest()
			req.Tools, req.ToolChoice, req.Output = tools, c.choice, c.output
			if name == "no tools" {
				req.Tools = nil
			}
			if _, err := m.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := sentFields(t, s.body(0), "tool_choice", "response_format")
			if got["tool_choice"] != c.wantTC {
				t.Errorf("tool_choice sent %s, want %s", got["tool_choice"], c.wantTC)
			}
			if got["response_format"] != c.wantResp {
				t.Errorf("response_format sent %s, want %s", got["response_format"], c.wantResp)
			}
		})
	}
}
