package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/services/meter/measure"
)

// A model that answers with a text larger than the bus takes in one
// message (and a call whose arguments are, in the next turn) ended the
// attempt as a harness error. Run through the whole fleet, the attempt is
// now graded on what it did, and the audit finds nothing wrong.
func TestAnAttemptWithAHugeReplyIsGraded(t *testing.T) {
	t.Setenv("FACTLINE_OPENAI_API_KEY", "sk-test-big")
	var sb strings.Builder
	for i := 0; sb.Len() < 1_500_000; i++ {
		fmt.Fprintf(&sb, "paragraph %d of an answer nobody asked for. ", i)
	}
	text := sb.String()
	big, err := json.Marshal(map[string]string{"path": "notes.txt", "content": text})
	must(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if json.Unmarshal(body, &req) != nil {
			http.Error(w, "no JSON", http.StatusBadRequest)
			return
		}
		turn := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				turn++
			}
		}
		var msg map[string]any
		finish := "tool_calls"
		call := func(name, args string) []any {
			return []any{map[string]any{"id": "c1", "type": "function", "function": map[string]string{"name": name, "arguments": args}}}
		}
		switch turn {
		case 0:
			msg = map[string]any{"role": "assistant", "content": text, "tool_calls": call("write_file", `{"path":"answer.txt","content":"4\n"}`)}
		case 1:
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": call("write_file", string(big))}
		default:
			msg, finish = map[string]any{"role": "assistant", "content": "done: answer.txt holds 4"}, "stop"
		}
		out, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]int{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	dir, store := t.TempDir(), t.TempDir()
	for file, content := range map[string]string{
		"a.yaml": "id: a\ninstruction: Make answer.txt hold 4.\nbudget: {steps: 5}\n" +
			"grading:\n  instruments: [{id: tests, kind: command, command: 'grep -qx 4 answer.txt'}]\n",
		"t.yaml":     fmt.Sprintf("id: t\nmodel: {provider: openai, name: m, base_url: %q}\n", srv.URL+"/v1"),
		"suite.yaml": "name: big\ncases: [{path: a.yaml}]\ntreatments: [{path: t.yaml}]\ntrials: 1\n",
	} {
		must(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
	}
	code, out, errOut := runCLI(t, "run", filepath.Join(dir, "suite.yaml"), "--store", store, "--json", "--fsync", "interval")
	var r measure.Report
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	if len(r.Attempts) != 1 || r.Attempts[0].Outcome != measure.OutcomePassed {
		t.Fatalf("the attempt: %+v, want it graded and passed", r.Attempts)
	}
	if code, out, errOut := runCLI(t, "audit", "--store", store, "--finished"); code != 0 {
		t.Fatalf("audit: exit %d\n%s\n%s", code, out, errOut)
	}
}
