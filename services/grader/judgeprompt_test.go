package grader_test

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
	"github.com/factline/factline/models/openai"
)

// A judge with a scale is asked for its rating on that scale: the request
// that reaches the provider (through the real OpenAI client, over HTTP)
// carries the scale's line with its ends, and a judge without a scale is
// asked for a verdict only.
func TestAJudgeWithAScaleIsAskedForTheScaleLine(t *testing.T) {
	var mu sync.Mutex
	prompts := map[string]string{} // model name → the user message it was sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("judge request %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading the judge request: %v", err)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("the judge request is no chat completion: %v: %s", err, body)
			return
		}
		for _, m := range req.Messages {
			if m.Role == "user" {
				mu.Lock()
				prompts[req.Model] = m.Content
				mu.Unlock()
			}
		}
		content := "Right.\nVERDICT: PASS"
		if req.Model == "judge-rated" {
			content = "Right, tersely.\nSCORE: 7\nVERDICT: PASS"
		}
		reply, _ := json.Marshal(content)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,`+
			`"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, req.Model, reply)
	}))
	defer srv.Close()
	t.Setenv(openai.EnvAPIKey, "test-key")

	e := start(t)
	judge := func(id, model, scale string) string {
		return fmt.Sprintf("    - {id: %s, kind: judge, model: {provider: openai, name: %s, base_url: %q}, rubric: answer is 4%s}\n",
			id, model, srv.URL+"/v1", scale)
	}
	req := e.publish("grading:\n  instruments:\n" +
		judge("rate", "judge-rated", ", scale: [0, 10]") +
		judge("plain", "judge-plain", "") +
		"  scorers:\n    - {id: quality, instrument: rate}\n")
	e.attempt("asked", req, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, e.grader().Grade(e.ctx, suite, "asked"))
	v := e.verdict("asked")

	mu.Lock()
	rated, plain := prompts["judge-rated"], prompts["judge-plain"]
	mu.Unlock()
	if !strings.Contains(rated, "Rate the work against the rubric from 0 (worst) to 10 (best)") || !strings.Contains(rated, "SCORE: n") {
		t.Fatalf("the scaled judge was not asked for its rating on [0, 10]:\n%s", rated)
	}
	if plain == "" || strings.Contains(plain, "SCORE") || strings.Contains(plain, "Rate the work") {
		t.Fatalf("the judge without a scale was asked for a rating (or not asked at all):\n%s", plain)
	}
	if q := v.Scores[0]; q.Raw == nil || *q.Raw != 7 || q.Min != 0 || q.Max != 10 {
		t.Fatalf("the rating the scaled judge gave is not its score: %+v", q)
	}
	if r := result(v, "rate"); r.Outcome != events.InstrumentPassed {
		t.Fatalf("rate: %+v", r)
	}
}
