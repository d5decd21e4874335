package view

import (
	"slices"
	"testing"
)

// A turn's request shows, beside its messages, the tool choice and output
// format an external agent asked for, under the port's own names; a
// request without them shows none, and an Anthropic request's effort (the
// treatment's) is not shown as the agent's.
func TestARequestShowsWhatTheAgentDemandedOfTheAnswer(t *testing.T) {
	for body, want := range map[string][]string{
		`{"messages":[{"content":"hi","role":"user"}],"output":{"kind":"json_schema","name":"v","schema":{"type":"object"}},"settings":{"model":""},"tool_choice":{"mode":"required"}}`: {
			`tool_choice: {"mode":"required"}`, `output: {"kind":"json_schema","name":"v","schema":{"type":"object"}}`},
		`{"messages":[{"content":"hi","role":"user"}],"model":"m","response_format":{"type":"json_object"},"tool_choice":"none"}`: {
			`tool_choice: "none"`, `response_format: {"type":"json_object"}`},
		`{"max_tokens":10,"messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"model":"m","output_config":{"effort":"low","format":{"schema":{"type":"object"},"type":"json_schema"}},"tool_choice":{"type":"any"}}`: {
			`tool_choice: {"type":"any"}`, `output_config.format: {"schema":{"type":"object"},"type":"json_schema"}`},
		`{"max_tokens":10,"messages":[{"content":"hi","role":"user"}],"model":"m","output_config":{"effort":"low"}}`: nil,
		`{"messages":[{"content":"hi","role":"user"}],"settings":{"model":""}}`:                                      nil,
	} {
		got := readRequest([]byte(body))
		if len(got.Messages) != 1 || !slices.Equal(got.Demands, want) {
			t.Errorf("%s:\n got messages %d, demands %q\nwant 1, %q", body, len(got.Messages), got.Demands, want)
		}
	}
}
