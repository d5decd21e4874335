package agentproxy

import (
	"strings"
	"testing"

	"github.com/factline/factline/models"
)

// A request the model port cannot carry is refused naming where: an
// image part, an unknown role, a tool that is no function.
func TestDecodeChatNamesWhatIsWrong(t *testing.T) {
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`:        "messages[0].content: part 0",
		`{"messages":[{"role":"wizard","content":"x"}]}`:                         "messages[0].role",
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"code"}]}`: "tools[0].type",
		`{"messages":[]}`: "messages: none",
		`{"messages":`:    "request body",
	} {
		_, err := DecodeChat([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", body, err, want)
		}
	}
}

// The decoder never panics, and what it accepts has messages.
func FuzzDecodeChat(f *testing.F) {
	f.Add([]byte(`{"model":"x","messages":[{"role":"user","content":"hello"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"ok"}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"response_format":{"type":"json_schema","json_schema":{"name":"v","schema":{"type":"object"}}}}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"g"}}]}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeChat(body)
		if err == nil && len(req.Request.Messages) == 0 {
			t.Fatalf("accepted %q with no messages", body)
		}
		if err == nil {
			acceptedDemands(t, body, req.Request)
		}
	})
}

// A Responses request the port cannot carry is refused naming where.
func TestDecodeResponsesNamesWhatIsWrong(t *testing.T) {
	for body, want := range map[string]string{
		`{"input":[{"role":"user","content":[{"type":"input_file"}]}]}`: "input[0].content: part 0",
		`{"input":[{"role":"wizard","content":"x"}]}`:                   "input[0].role",
		`{"input":[{"type":"item_reference","id":"x"}]}`:                "input[0].type",
		`{"input":[{"type":"function_call","name":"f"}]}`:               "input[0]: a function_call needs call_id",
		`{"input":[{"type":"function_call_output","output":"x"}]}`:      "input[0].call_id",
		`{"input":"x","tools":[{"type":"function"}]}`:                   "tools[0].name",
		`{"input":"x","previous_response_id":"resp_1"}`:                 "previous_response_id",
		`{"input":[]}`:  "input: none",
		`{"model":"x"}`: "input: required",
		`{"input":`:     "request body",
		`{"input":[{"type":"reasoning","summary":[]}]}`:                       "input: none",
		`{"input":[{"role":"user","content":"x"}],"tools":[{"type":"code"}]}`: "tools[0].type",
	} {
		_, _, err := DecodeResponses([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", body, err, want)
		}
	}
}

// A Messages request the port cannot carry is refused naming where.
func TestDecodeMessagesNamesWhatIsWrong(t *testing.T) {
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":[{"type":"document"}]}]}`:                           "messages[0].content[0].type",
		`{"messages":[{"role":"tool","content":"x"}]}`:                                             "messages[0].role",
		`{"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f"}]}]}`:       "messages[0].content[0]: a tool_use block in a user message",
		`{"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"a"}]}]}`: "messages[0].content[0]: a tool_result block in a assistant message",
		`{"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`:                        "messages[0].content[0].tool_use_id",
		`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"image"}]}]}]}`: "messages[1].content[0].content: block 0",
		`{"system":[{"type":"image"}],"messages":[{"role":"user","content":"x"}]}`: "system: block 0",
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"name":""}]}`:       "tools[0].name",
		`{"messages":[{"role":"user","content":5}]}`:                               "messages[0].content",
		`{"messages":[]}`: "messages: none",
		`{"messages":`:    "request body",
	} {
		_, _, err := DecodeMessages([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", body, err, want)
		}
	}
}

// A user message's tool results are tool messages in order, its text a
// user message after them; an error result says so; thinking is dropped.
func TestDecodeMessagesSplitsToolResults(t *testing.T) {
	req, stream, err := DecodeMessages([]byte(`{"stream":true,"messages":[
		{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"two"},
			{"type":"tool_use","id":"a","name":"f","input":{"x":1}},{"type":"tool_use","id":"b","name":"g","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ok"},
			{"type":"tool_result","tool_use_id":"b","is_error":true,"content":[{"type":"text","text":"no"}]},{"type":"text","text":"go on"}]}]}`))
	if err != nil || !stream {
		t.Fatal(err, stream)
	}
	m := req.Messages
	if len(m) != 4 || m[0].Content != "two" || len(m[0].ToolCalls) != 2 || m[0].ToolCalls[0].Args != `{"x":1}` ||
		m[1].Role != "tool" || m[1].ToolCallID != "a" || m[1].Content != "ok" ||
		m[2].ToolCallID != "b" || m[2].Content != "error: no" || m[3].Role != "user" || m[3].Content != "go on" {
		t.Fatalf("messages %+v", m)
	}
}

// The decoder never panics, and what it accepts has messages.
func FuzzDecodeResponses(f *testing.F) {
	f.Add([]byte(`{"model":"x","instructions":"be brief","input":"hello","stream":true}`))
	f.Add([]byte(`{"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"x"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"},{"type":"reasoning"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`))
	f.Add([]byte(`{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","name":"v","schema":{"type":"object"}}}}`))
	f.Add([]byte(`{"input":"x","tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, _, err := DecodeResponses(body)
		if err == nil && len(req.Messages) == 0 {
			t.Fatalf("accepted %q with no messages", body)
		}
		if err == nil {
			acceptedDemands(t, body, req)
		}
	})
}

// The decoder never panics, and what it accepts has messages.
func FuzzDecodeMessages(f *testing.F) {
	f.Add([]byte(`{"model":"x","max_tokens":5,"system":"be brief","messages":[{"role":"user","content":"hello"}],"stream":true}`))
	f.Add([]byte(`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ok"}]},{"role":"system","content":[{"type":"text","text":"note"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"f"},"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, _, err := DecodeMessages(body)
		if err == nil && len(req.Messages) == 0 {
			t.Fatalf("accepted %q with no messages", body)
		}
		if err == nil {
			acceptedDemands(t, body, req)
		}
	})
}

// A body of the wrong JSON shape is refused in the wire's terms, naming
// the field and what it should hold, never with the decoder's Go types.
func TestABodyOfTheWrongShapeIsNamedInJSONTerms(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"chat":      func(b []byte) error { _, err := DecodeChat(b); return err },
		"messages":  func(b []byte) error { _, _, err := DecodeMessages(b); return err },
		"responses": func(b []byte) error { _, _, err := DecodeResponses(b); return err },
	}
	for wire, decode := range decoders {
		for body, want := range map[string]string{
			`[1,2]`:             "request body: want a JSON object, got an array",
			`"hello"`:           "request body: want a JSON object, got a string",
			`{"stream":"yes"}`:  "request body: stream (at byte 15): want true or false, got a string",
			`{"messages":"hi"}`: "request body: messages (at byte 16): want an array, got a string",
			`{"messages":[{"role":"user"},{"role":5}]}`: "request body: messages.role (at byte 38): want a string, got a number",
		} {
			if wire == "responses" && strings.Contains(body, "messages") {
				continue // Responses has input, not messages.
			}
			err := decode([]byte(body))
			if err == nil || err.Error() != want {
				t.Errorf("%s %s: error %v, want %q", wire, body, err, want)
			}
		}
	}
}

// acceptedDemands checks that a tool choice and output a decoder accepted
// are ones the model port's providers take.
func acceptedDemands(t *testing.T, body []byte, req models.Request) {
	t.Helper()
	if c := req.ToolChoice; c != nil {
		if err := c.Check(req.Tools); err != nil {
			t.Fatalf("accepted %q with the tool choice %+v: %v", body, *c, err)
		}
	}
	if o := req.Output; o != nil {
		if err := o.Check(); err != nil {
			t.Fatalf("accepted %q with the output %+v: %v", body, *o, err)
		}
	}
}
