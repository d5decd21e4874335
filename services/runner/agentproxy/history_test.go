package agentproxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/factline/factline/services/runner/agentproxy"
)

// postTo posts body to path at s with s's token and returns the status and
// the body of the answer.
func postTo(t *testing.T, s *agentproxy.Server, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.Origin()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, got
}

// historyCase is a request whose history a provider refuses, and the
// field and index the refusal must name.
type historyCase struct {
	name, body, want string
}

// chatHistories are Chat Completions histories OpenAI refuses.
var chatHistories = []historyCase{
	{"arguments not JSON", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"path\": "}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"}]}`, "messages[1].tool_calls[0].function.arguments"},
	{"arguments not an object", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"[1,2]"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"}]}`, "messages[1].tool_calls[0].function.arguments"},
	{"call without id", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[1].tool_calls[0].id"},
	{"call without name", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"arguments":"{}"}}]}]}`, "messages[1].tool_calls[0].function.name"},
	{"tool message without tool_call_id", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","content":"ok"}]}`, "messages[2].tool_call_id"},
	{"tool message naming no call made", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c2","content":"ok"}]}`, "messages[2].tool_call_id"},
	{"tool message before its call", `{"messages":[{"role":"user","content":"go"},
		{"role":"tool","tool_call_id":"c1","content":"ok"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[1].tool_call_id"},
	{"a call no tool message answers", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},
			{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"user","content":"and?"}]}`, "messages[1].tool_calls[1]"},
	{"calls in a user message", `{"messages":[
		{"role":"user","content":"go","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls"},
	{"a user message between a call and its tool message", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"user","content":"well?"},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`, "messages[1].tool_calls[0]"},
	{"a tool message answering an earlier assistant message", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"},
		{"role":"assistant","tool_calls":[{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"again"},{"role":"tool","tool_call_id":"c2","content":"ok"}]}`, "messages[4].tool_call_id"},
	{"two calls with one id", `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},
			{"id":"c1","type":"function","function":{"name":"g","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"one"},{"role":"tool","tool_call_id":"c1","content":"two"}]}`, "messages[1].tool_calls[1].id"},
}

// responsesHistories are Responses histories OpenAI refuses.
var responsesHistories = []historyCase{
	{"arguments not JSON", `{"input":[{"role":"user","content":"go"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"cmd\":"},
		{"type":"function_call_output","call_id":"c1","output":"ok"}]}`, "input[1].arguments"},
	{"arguments not an object", `{"input":[{"role":"user","content":"go"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"\"ls\""},
		{"type":"function_call_output","call_id":"c1","output":"ok"}]}`, "input[1].arguments"},
	{"output naming no call made", `{"input":[{"role":"user","content":"go"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"c9","output":"ok"}]}`, "input[2].call_id"},
	{"a call no output answers", `{"input":[{"role":"user","content":"go"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"role":"user","content":"and?"}]}`, "input[1]"},
	{"output before its call", `{"input":[{"role":"user","content":"go"},
		{"type":"function_call_output","call_id":"c1","output":"ok"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`, "input[1].call_id"},
	{"two calls with one call_id", `{"input":[{"role":"user","content":"go"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"function_call","call_id":"c1","name":"g","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"one"},{"type":"function_call_output","call_id":"c1","output":"two"}]}`, "input[2].call_id"},
}

// messagesHistories are Messages histories Anthropic refuses.
var messagesHistories = []historyCase{
	{"input a string", `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"{\"cmd\":\"ls\"}"}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`, "messages[1].content[0].input"},
	{"input an array", `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":[1]}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`, "messages[1].content[0].input"},
	{"input missing", `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f"}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`, "messages[1].content[0].input"},
	{"result naming no tool_use", `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]}]}`, "messages[2].content[0].tool_use_id"},
	{"a tool_use no result answers", `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"text","text":"two"},{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":"and?"}]}`, "messages[1].content[1]"},
	{"result before its tool_use", `{"max_tokens":5,"messages":[
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}]}`, "messages[0].content[0].tool_use_id"},
	{"a result not in the next message", `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":"well?"},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`, "messages[1].content[0]"},
	{"a result answering an earlier assistant message", `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"again"},{"type":"tool_result","tool_use_id":"t2","content":"ok"}]}]}`, "messages[4].content[0].tool_use_id"},
	{"two tool_use blocks with one id", `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}},{"type":"tool_use","id":"t1","name":"g","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one"},{"type":"tool_result","tool_use_id":"t1","content":"two"}]}]}`, "messages[1].content[1].id"},
}

// A history the provider would refuse is refused as the provider does:
// 400 in the wire's error shape (OpenAI's {"error":{...}} with
// invalid_request_error, Anthropic's {"type":"error","error":{...}}), its
// message naming the field and the message's index, and the attempt is
// never called, so nothing is recorded for it: OnInvalid's function is
// told of each instead.
func TestAHistoryTheProviderWouldRefuseIsRefused(t *testing.T) {
	var calls int
	s := start(t, answering("fine", &calls))
	var mu sync.Mutex
	var told []string
	s.OnInvalid(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, err.Error())
	})
	sent := 0
	for _, w := range []struct {
		path      string
		cases     []historyCase
		anthropic bool
	}{
		{agentproxy.ChatPath, chatHistories, false},
		{agentproxy.ResponsesPath, responsesHistories, false},
		{agentproxy.MessagesPath, messagesHistories, true},
	} {
		for _, c := range w.cases {
			for _, stream := range []bool{false, true} {
				body := c.body
				if stream {
					body = `{"stream":true,` + body[1:]
				}
				status, got := postTo(t, s, w.path, body)
				sent++
				if status != http.StatusBadRequest {
					t.Errorf("%s %s (stream %v): HTTP %d %.80s…, want 400", w.path, c.name, stream, status, got)
					continue
				}
				var e struct {
					Type  string `json:"type"`
					Error struct {
						Type    string `json:"type"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal(got, &e); err != nil {
					t.Errorf("%s %s: body %s is not JSON: %v", w.path, c.name, got, err)
					continue
				}
				if e.Error.Type != "invalid_request_error" || (w.anthropic && e.Type != "error") || (!w.anthropic && e.Type != "") {
					t.Errorf("%s %s: body %s is not the wire's invalid request error", w.path, c.name, got)
				}
				if !strings.Contains(e.Error.Message, c.want) {
					t.Errorf("%s %s: message %q does not name %s", w.path, c.name, e.Error.Message, c.want)
				}
			}
		}
	}
	if calls != 0 {
		t.Fatalf("the attempt was called %d times for refused requests, want 0", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != sent || !strings.Contains(told[0], chatHistories[0].want) {
		t.Fatalf("OnInvalid was told of %d refusals (%q…), want %d", len(told), told[:min(len(told), 1)], sent)
	}
}

// The histories next to the refused ones that a provider takes are still
// answered: a call with no arguments (blank, as some models give it),
// the results of one message's calls in another order than the calls, a
// call ID made again in a later turn once the first was answered (a
// model that numbers its calls per reply makes call_0 every turn), a
// system message among Anthropic messages between a tool_use and its
// tool_result (no turn of the conversation).
func TestAHistoryTheProviderTakesIsAnswered(t *testing.T) {
	var calls int
	s := start(t, answering("fine", &calls))
	var told atomic.Int32
	s.OnInvalid(func(error) { told.Add(1) })
	for _, c := range []struct{ path, body string }{
		{agentproxy.ChatPath, `{"messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":""}},
				{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"a\":[1]}"}}]},
			{"role":"tool","tool_call_id":"c2","content":"two"},{"role":"tool","tool_call_id":"c1","content":"one"}]}`},
		{agentproxy.ChatPath, `{"messages":[{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[{"id":"call_0","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_0","content":"one"},
			{"role":"assistant","content":"again","tool_calls":[{"id":"call_0","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_0","content":"two"}]}`},
		{agentproxy.ResponsesPath, `{"input":[{"role":"user","content":"go"},
			{"type":"function_call","call_id":"call_0","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_0","output":"one"},
			{"type":"function_call","call_id":"call_0","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_0","output":"two"}]}`},
		{agentproxy.MessagesPath, `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"call_0","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0","content":"one"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"call_0","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0","content":"two"}]},
			{"role":"user","content":"and a word more"}]}`},
		{agentproxy.MessagesPath, `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
			{"role":"system","content":"a note between the call and its result"},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`},
		{agentproxy.ResponsesPath, `{"input":[{"role":"user","content":"go"},
			{"type":"function_call","call_id":"c1","name":"f","arguments":""},
			{"type":"function_call","call_id":"c2","name":"g","arguments":"{\"a\":1}"},
			{"type":"function_call_output","call_id":"c1","output":"ok"},{"type":"function_call_output","call_id":"c2","output":"ok"}]}`},
		{agentproxy.MessagesPath, `{"max_tokens":5,"messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}},{"type":"tool_use","id":"t2","name":"g","input":{"a":1}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"},{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`},
	} {
		if status, got := postTo(t, s, c.path, c.body); status != http.StatusOK {
			t.Errorf("%s: HTTP %d %s, want 200", c.path, status, got)
		}
	}
	if calls != 7 || told.Load() != 0 {
		t.Fatalf("the attempt was called %d times, want 7; OnInvalid told %d times, want 0", calls, told.Load())
	}
}
