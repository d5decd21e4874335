package responses

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/responses/responsestest"
)

// A request's tool choice and output format reach the Responses wire as
// tool_choice and text.format, in the body Complete sends.
func TestToolChoiceAndOutputAreSent(t *testing.T) {
	tools := []models.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	cases := map[string]struct {
		choice           *models.ToolChoice
		output           *models.Output
		wantTC, wantText string
	}{
		"forced tool and json schema": {&models.ToolChoice{Mode: models.ToolChoiceTool, Name: "f"},
			&models.Output{Kind: models.OutputJSONSchema, Name: "verdict", Description: "the verdict", Schema: schema, Strict: true},
			`{"name":"f","type":"function"}`,
			`{"format":{"name":"verdict","schema":{"properties":{"answer":{"type":"string"}},"required":["answer"],"type":"object"},"strict":true,"description":"the verdict","type":"json_schema"}}`},
		"none and json object": {&models.ToolChoice{Mode: models.ToolChoiceNone}, &models.Output{Kind: models.OutputJSONObject},
			`"none"`, `{"format":{"type":"json_object"}}`},
		"required and text": {&models.ToolChoice{Mode: models.ToolChoiceRequired}, &models.Output{Kind: models.OutputText},
			`"required"`, `{"format":{"type":"text"}}`},
		"json schema without a name": {nil, &models.Output{Kind: models.OutputJSONSchema, Schema: schema},
			``, `{"format":{"name":"output","schema":{"properties":{"answer":{"type":"string"}},"required":["answer"],"type":"object"},"type":"json_schema"}}`},
		"neither":  {nil, nil, ``, ``},
		"no tools": {&models.ToolChoice{Mode: models.ToolChoiceAuto}, nil, ``, ``},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			fake := responsestest.Start(t, responsestest.Replies(responsestest.Text("gpt-test", "{}", responsestest.Usage{InputTokens: 10, OutputTokens: 2})))
			m, _ := newModel(t, fake, Config{})
			req := hi()
			req.Tools, req.ToolChoice, req.Output = tools, c.choice, c.output
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
			if got := string(top["text"]); got != c.wantText {
				t.Errorf("text sent %s, want %s", got, c.wantText)
			}
		})
	}
}
