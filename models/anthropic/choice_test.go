package anthropic

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/anthropic/anthropictest"
)

// A request's tool choice reaches the Messages wire as tool_choice, and a
// JSON schema output as output_config.format, in the body Complete sends.
func TestToolChoiceAndOutputAreSent(t *testing.T) {
	tools := []models.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	cases := map[string]struct {
		choice             *models.ToolChoice
		output             *models.Output
		wantTC, wantOutput string
	}{
		"forced tool and json schema": {&models.ToolChoice{Mode: models.ToolChoiceTool, Name: "f"},
			&models.Output{Kind: models.OutputJSONSchema, Name: "verdict", Schema: schema, Strict: true},
			`{"name":"f","type":"tool"}`,
			`{"format":{"schema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]},"type":"json_schema"}}`},
		"required": {&models.ToolChoice{Mode: models.ToolChoiceRequired}, nil, `{"type":"any"}`, ``},
		"none":     {&models.ToolChoice{Mode: models.ToolChoiceNone}, nil, `{"type":"none"}`, ``},
		"auto and text": {&models.ToolChoice{Mode: models.ToolChoiceAuto}, &models.Output{Kind: models.OutputText},
			`{"type":"auto"}`, ``},
		"neither":  {nil, nil, ``, ``},
		"no tools": {&models.ToolChoice{Mode: models.ToolChoiceAuto}, nil, ``, ``},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("claude-test", "{}", anthropictest.Usage{InputTokens: 10, OutputTokens: 2})))
			m, _ := newModel(t, fake, Config{})
			req := models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}},
				Tools: tools, ToolChoice: c.choice, Output: c.output}
			if name == "no tools" {
				req.Tools = nil
			}
			if _, err := m.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(fake.Bodies()[0], &top); err != nil {
				t.Fatal(err)
			}
			if got := string(top["tool_choice"]); got != c.wantTC {
				t.Errorf("tool_choice sent %s, want %s", got, c.wantTC)
			}
			if got := string(top["output_config"]); got != c.wantOutput {
				t.Errorf("output_config sent %s, want %s", got, c.wantOutput)
			}
		})
	}
}

// JSON mode has no place on the Messages wire: a request asking for it is
// refused at call time, naming it, and nothing is sent.
func TestJSONObjectOutputIsRefused(t *testing.T) {
	fake := anthropictest.Start(t, anthropictest.Replies(anthropictest.Text("claude-test", "{}", anthropictest.Usage{})))
	m, _ := newModel(t, fake, Config{})
	req := models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}},
		Output: &models.Output{Kind: models.OutputJSONObject}}
	_, err := m.Complete(context.Background(), req)
	if models.KindOf(err) != models.ErrBadRequest || !strings.Contains(err.Error(), "json_object") {
		t.Fatalf("Complete: %v, want a bad request naming json_object", err)
	}
	if n := len(fake.Bodies()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}
