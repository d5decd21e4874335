package runner_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/factline/factline/events"
)

// chatServer is a Chat Completions endpoint on 127.0.0.1 that answers the
// n-th request with replies[n] (the last one once they run out).
func chatServer(t *testing.T, replies ...string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"no route"}}`, http.StatusNotFound)
			return
		}
		mu.Lock()
		body := replies[min(n, len(replies)-1)]
		n++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// chatReply is a Chat Completions reply whose message makes calls, each a
// name and its arguments' JSON text.
func chatReply(calls ...[2]string) string { return chatReplyFinish("tool_calls", calls...) }

// chatReplyFinish is chatReply with the finish reason given.
func chatReplyFinish(finish string, calls ...[2]string) string {
	var tc []map[string]any
	for i, c := range calls {
		tc = append(tc, map[string]any{"id": fmt.Sprintf("c%d", i+1), "type": "function",
			"function": map[string]string{"name": c[0], "arguments": c[1]}})
	}
	b, _ := json.Marshal(map[string]any{"id": "r", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
			"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": tc}}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 2}})
	return string(b)
}

// A tool call whose function name is empty (local servers' tool parsers
// emit one when the model garbles its call) is a bad call like any other:
// UNKNOWN_TOOL, saying the call names no tool, while the other calls of
// the reply still run and the run goes on. It used to end the run errored
// as a harness error, because model.replied refuses an empty name.
func TestACallWithoutAToolNameIsAnUnknownToolObservation(t *testing.T) {
	t.Parallel()
	e := start(t)
	srv := chatServer(t,
		chatReply([2]string{"", `{"command":"./check.sh"}`}, [2]string{"run_command", `{"command":"echo 4 > answer.txt"}`}),
		chatReply([2]string{"task_complete", `{"status":"blocked","reason":"test","unmet":[]}`}))
	log, end := e.runNative("openai", srv.URL+"/v1", "{steps: 4}", "unnamed-call")
	if end.Status != events.RunBlocked {
		t.Fatalf("run ended %s (%s), want blocked: a nameless call must not end the run", end.Status, end.Reason)
	}
	ds := dispatches(log)
	bad := ds["t1/c1"]
	if bad.Error == nil || bad.Error.Code != "UNKNOWN_TOOL" || bad.Dispatch.Disposition != events.DispositionRejected {
		t.Fatalf("the nameless call: %+v, want a rejected UNKNOWN_TOOL", bad)
	}
	if !strings.Contains(bad.Error.Message, "names no tool") {
		t.Errorf("the observation does not say what is wrong: %q", bad.Error.Message)
	}
	if ok := ds["t1/c2"]; ok.Error != nil || ok.Dispatch.Mutation != events.MutationApplied {
		t.Errorf("the other call of the reply did not run: %+v", ok)
	}
}

// A reply cut at its output-token limit (finish_reason "length") leaves the
// call it was writing unfinished JSON, as when a model writes a large file
// with write_file. The BAD_ARGUMENTS observation says the reply was cut,
// and what to do; a bare "unexpected EOF" had the model send the same
// too-long call again.
func TestArgumentsCutByTheTokenLimitSaySo(t *testing.T) {
	t.Parallel()
	e := start(t)
	srv := chatServer(t,
		chatReplyFinish("length", [2]string{"write_file", `{"path": "big.txt", "content": "line 1\nline 2\nli`}),
		chatReply([2]string{"task_complete", `{"status":"blocked","reason":"test","unmet":[]}`}))
	log, end := e.runNative("openai", srv.URL+"/v1", "{steps: 4}", "cut-call")
	if end.Status != events.RunBlocked {
		t.Fatalf("run ended %s (%s), want blocked", end.Status, end.Reason)
	}
	bad := dispatches(log)["t1/c1"]
	if bad.Error == nil || bad.Error.Code != "BAD_ARGUMENTS" {
		t.Fatalf("the cut call: %+v, want BAD_ARGUMENTS", bad)
	}
	for _, want := range []string{"not valid JSON", "output-token limit", "finish length"} {
		if !strings.Contains(bad.Error.Message, want) {
			t.Errorf("the observation %q does not say %q", bad.Error.Message, want)
		}
	}
}
