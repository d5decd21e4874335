package scripted

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/factline/factline/models"
)

// The scripted render (the request blob, and so the response cache's
// key) holds a request's tool choice and output format, canonical like
// the rest, and leaves a request without them as it was.
func TestRenderHoldsToolChoiceAndOutput(t *testing.T) {
	m := mustParse(t, "turns: [{}]\n")
	req := models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}}
	plain, err := m.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"messages":[{"content":"hi","role":"user"}],"settings":{"model":""}}`; string(plain) != want {
		t.Fatalf("Render without them:\n got %s\nwant %s", plain, want)
	}
	req.ToolChoice = &models.ToolChoice{Mode: models.ToolChoiceRequired}
	req.Output = &models.Output{Kind: models.OutputJSONSchema, Name: "v", Schema: json.RawMessage(`{"type": "object", "properties": {}}`), Strict: true}
	got, err := m.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"content":"hi","role":"user"}],` +
		`"output":{"kind":"json_schema","name":"v","schema":{"properties":{},"type":"object"},"strict":true},` +
		`"settings":{"model":""},"tool_choice":{"mode":"required"}}`
	if string(got) != want {
		t.Errorf("Render with them:\n got %s\nwant %s", got, want)
	}
}

// The scripted model answers by script whatever format a request asks
// for, but a script whose turn contradicts a forced tool choice is an
// error naming the turn, not a reply a provider could never give.
func TestCompleteChecksAForcedToolChoice(t *testing.T) {
	m := mustParse(t, `turns:
  - calls: [{name: read, args: {path: a}}]
  - text: done
`)
	tools := []models.ToolSpec{{Name: "read"}, {Name: "write"}}
	cases := []struct {
		turn   int
		choice models.ToolChoice
		want   string // "" when the reply stands
	}{
		{1, models.ToolChoice{Mode: models.ToolChoiceAuto}, ""},
		{1, models.ToolChoice{Mode: models.ToolChoiceRequired}, ""},
		{1, models.ToolChoice{Mode: models.ToolChoiceTool, Name: "read"}, ""},
		{1, models.ToolChoice{Mode: models.ToolChoiceNone}, `turn 1: the script calls read, but the request's tool_choice is none`},
		{1, models.ToolChoice{Mode: models.ToolChoiceTool, Name: "write"}, `turn 1: the script calls read, but the request's tool_choice forces write`},
		{2, models.ToolChoice{Mode: models.ToolChoiceNone}, ""},
		{2, models.ToolChoice{Mode: models.ToolChoiceRequired}, `turn 2: the script calls no tool, but the request's tool_choice is required`},
		{2, models.ToolChoice{Mode: models.ToolChoiceTool, Name: "write"}, `turn 2: the script calls no tool, but the request's tool_choice forces write`},
	}
	for _, c := range cases {
		choice := c.choice
		req := models.Request{Turn: c.turn, Tools: tools, ToolChoice: &choice,
			Output: &models.Output{Kind: models.OutputJSONObject}}
		_, err := m.Complete(context.Background(), req)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("turn %d, %+v: %v", c.turn, c.choice, err)
		case c.want != "" && (models.KindOf(err) != models.ErrBadResponse || !strings.Contains(err.Error(), c.want)):
			t.Errorf("turn %d, %+v: %v, want a bad response saying %q", c.turn, c.choice, err, c.want)
		}
	}
}
