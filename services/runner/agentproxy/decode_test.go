package agentproxy

import (
	"strings"
	"testing"
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
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeChat(body)
		if err == nil && len(req.Request.Messages) == 0 {
			t.Fatalf("accepted %q with no messages", body)
		}
	})
}
