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
