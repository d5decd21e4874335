package agentproxy

import (
	"strings"
	"testing"

	"github.com/factline/factline/models"
)

// The Chat Completions objects the endpoint answers with carry the API's
// fields in the API's order, whole and streamed: the bytes are pinned.
func TestChatObjectsKeepTheWireOrder(t *testing.T) {
	r := models.Reply{
		Text:  "looking",
		Calls: []models.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"a.go"}`}},
		Usage: &models.Usage{InputTokens: 7, OutputTokens: 3},
	}
	whole, err := EncodeChat("id1", "m", 42, r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"id1","object":"chat.completion","created":42,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"looking","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`
	if string(whole) != want {
		t.Errorf("EncodeChat:\n got %s\nwant %s", whole, want)
	}
	chunks, err := EncodeChatStream("id1", "m", 42, r, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range chunks {
		got = append(got, string(c))
	}
	head := `{"id":"id1","object":"chat.completion.chunk","created":42,"model":"m","choices":`
	wantChunks := []string{
		head + `[{"index":0,"delta":{"role":"assistant","content":"looking"},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]},"finish_reason":null}]}`,
		head + `[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		head + `[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`,
	}
	if strings.Join(got, "\n") != strings.Join(wantChunks, "\n") {
		t.Errorf("EncodeChatStream:\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(wantChunks, "\n"))
	}
}

// A reply that is only calls has null content in the whole completion and
// an empty text in the stream's first chunk; a reply with neither text nor
// calls stops with its empty text. The bytes are pinned.
func TestChatObjectsOfCallsOnlyAndEmptyReplies(t *testing.T) {
	calls := models.Reply{Calls: []models.ToolCall{{ID: "c1", Name: "ls", Args: `{}`}}}
	cases := []struct {
		name   string
		r      models.Reply
		whole  string
		chunks []string
	}{
		{"calls only", calls,
			`{"id":"i","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			[]string{
				`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
				`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},"finish_reason":null}]}`,
				`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			}},
		{"empty", models.Reply{},
			`{"id":"i","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`,
			[]string{
				`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
				`[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			}},
	}
	for _, c := range cases {
		whole, err := EncodeChat("i", "m", 1, c.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(whole) != c.whole {
			t.Errorf("%s: EncodeChat:\n got %s\nwant %s", c.name, whole, c.whole)
		}
		// No usage known: none is sent, even when asked for.
		chunks, err := EncodeChatStream("i", "m", 1, c.r, true)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for i, ch := range chunks {
			got = append(got, string(ch))
			if i < len(c.chunks) {
				want = append(want, `{"id":"i","object":"chat.completion.chunk","created":1,"model":"m","choices":`+c.chunks[i])
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(c.chunks) {
			t.Errorf("%s: EncodeChatStream:\n got %s\nwant %d chunks ending %s", c.name, strings.Join(got, "\n"), len(c.chunks), strings.Join(c.chunks, "\n"))
		}
	}
}
