package models

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestToolChoiceCheck(t *testing.T) {
	tools := []ToolSpec{{Name: "read"}}
	for _, c := range []struct {
		choice ToolChoice
		want   string
	}{
		{ToolChoice{Mode: ToolChoiceAuto}, ""},
		{ToolChoice{Mode: ToolChoiceNone}, ""},
		{ToolChoice{Mode: ToolChoiceRequired}, ""},
		{ToolChoice{Mode: ToolChoiceTool, Name: "read"}, ""},
		{ToolChoice{Mode: ToolChoiceTool, Name: "write"}, `tool "write" is not among the request's tools`},
		{ToolChoice{Mode: ToolChoiceTool}, "needs the name of a tool"},
		{ToolChoice{Mode: ToolChoiceNone, Name: "read"}, "names no tool"},
		{ToolChoice{Mode: "any"}, `unknown mode "any"`},
	} {
		err := c.choice.Check(tools)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.choice, err, c.want)
		}
	}
	for _, c := range []struct {
		choice ToolChoice
		want   string
	}{
		{ToolChoice{Mode: ToolChoiceAuto}, ""},
		{ToolChoice{Mode: ToolChoiceNone}, ""},
		{ToolChoice{Mode: ToolChoiceRequired}, "offers no tools"},
		{ToolChoice{Mode: ToolChoiceTool, Name: "read"}, "not among the request's tools"},
	} {
		err := c.choice.Check(nil)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.choice, err, c.want)
		}
	}
}

func TestOutputCheck(t *testing.T) {
	for _, c := range []struct {
		out  Output
		want string
	}{
		{Output{Kind: OutputText}, ""},
		{Output{Kind: OutputJSONObject}, ""},
		{Output{Kind: OutputJSONSchema, Name: "v", Schema: json.RawMessage(`{"type":"object"}`)}, ""},
		{Output{Kind: OutputJSONSchema, Name: "v"}, "needs a schema"},
		{Output{Kind: OutputJSONSchema, Schema: json.RawMessage(`null`)}, "needs a schema"},
		{Output{Kind: OutputJSONSchema, Schema: json.RawMessage(`[1]`)}, "not a JSON object"},
		{Output{Kind: OutputJSONObject, Schema: json.RawMessage(`{}`)}, "takes no schema"},
		{Output{Kind: "xml"}, `unknown kind "xml"`},
	} {
		err := c.out.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.out, err, c.want)
		}
	}
}

// A request without a tool choice or an output format marshals as before
// they existed: stored requests and their digests are unchanged.
func TestRequestWithoutThemMarshalsAsBefore(t *testing.T) {
	b, err := json.Marshal(Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"messages":[{"role":"user","content":"hi"}],"settings":{"model":""}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
