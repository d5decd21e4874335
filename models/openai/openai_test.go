package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/models"
)

const testKey = "sk-test-SECRET-0123456789abcdef"

// reply is one canned HTTP answer of the fake server.
type reply struct {
	status int
	header map[string]string
	body   string
	hang   bool // block until the client gives up
	drop   bool // close the connection without answering
}

// server is a fake Chat Completions endpoint on 127.0.0.1. It answers the
// queued replies in order (the last one repeats) and records every request.
type server struct {
	t       *testing.T
	srv     *httptest.Server
	release chan struct{}

	mu       sync.Mutex
	replies  []reply
	bodies   [][]byte
	requests []*http.Request
}

func newServer(t *testing.T, replies ...reply) *server {
	t.Helper()
	s := &server{t: t, replies: replies, release: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(func() {
		close(s.release)
		s.srv.Close()
	})
	if !strings.HasPrefix(s.srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server is not on loopback: %s", s.srv.URL)
	}
	return s
}

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("reading request body: %v", err)
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.requests = append(s.requests, r.Clone(context.Background()))
	n := len(s.bodies)
	rep := s.replies[min(n, len(s.replies))-1]
	s.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("request %d: %s %s, want POST /v1/chat/completions", n, r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.t.Errorf("request %d: Content-Type %q", n, ct)
	}
	switch {
	case rep.hang:
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	case rep.drop:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			s.t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.Close()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.body)
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func (s *server) body(i int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// newModel returns a Model for s whose waits are recorded, not slept.
func newModel(t *testing.T, s *server, cfg Config) (*Model, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = s.srv.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	m.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		*waits = append(*waits, d)
		return ctx.Err()
	}
	m.jitter = func() float64 { return 0.5 }
	return m, waits
}

func simpleRequest() models.Request {
	return models.Request{Turn: 1, Messages: []models.Message{
		{Role: models.RoleSystem, Content: "You are terse."},
		{Role: models.RoleUser, Content: "Say hi."},
	}}
}

const textReply = `{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-test-2025-01-01",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": "Hi.", "refusal": null, "annotations": []},
    "logprobs": null,
    "finish_reason": "stop"
  }],
  "usage": {
    "prompt_tokens": 19,
    "completion_tokens": 3,
    "total_tokens": 22,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_test"
}`

const toolCallReply = `{
  "id": "chatcmpl-tools",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-test",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"README.md\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\": \"x\", \"content\": "}}
      ],
      "refusal": null
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160}
}`

func TestCompleteText(t *testing.T) {
	s := newServer(t, reply{body: textReply})
	m, waits := newModel(t, s, Config{InputPrice: 2_000_000, OutputPrice: 10_000_000})
	req := simpleRequest()

	got, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	cost := uint64(19*2 + 3*10)
	want := models.Reply{
		Text: "Hi.",
		// The provider reported its cached and reasoning parts (zero): known.
		Usage:  &models.Usage{InputTokens: 19, OutputTokens: 3, Cost: &cost, CachedInputTokens: u64(0), ReasoningTokens: u64(0)},
		Finish: models.FinishStop,
		Model:  "gpt-test-2025-01-01",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Complete:\n got %+v (usage %+v)\nwant %+v", got, got.Usage, want)
	}
	if s.count() != 1 || len(*waits) != 0 {
		t.Errorf("%d requests and waits %v, want 1 request and no wait", s.count(), *waits)
	}
	r := s.requests[0]
	if auth := r.Header.Get("Authorization"); auth != "Bearer "+testKey {
		t.Errorf("Authorization header %q", auth)
	}
	rendered, err := m.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.body(0), rendered) {
		t.Errorf("sent body differs from Render:\nsent   %s\nrender %s", s.body(0), rendered)
	}
}

func TestRenderIsTheSentBody(t *testing.T) {
	temp := 0.2
	seed := int64(42)
	requests := map[string]models.Request{
		"plain": simpleRequest(),
		"tools and history": {Messages: []models.Message{
			{Role: models.RoleSystem, Content: "Use tools. <b>&</b> \u2028 ünïcode"},
			{Role: models.RoleUser, Content: "Read the README."},
			{Role: models.RoleAssistant, Content: "Reading.", ToolCalls: []models.ToolCall{
				{ID: "call_1", Name: "read_file", Args: `{"path": "README.md"}`},
				{ID: "call_2", Name: "broken", Args: `{"unterminated`},
			}},
			{Role: models.RoleTool, ToolCallID: "call_1", Content: "# factline"},
			{Role: models.RoleTool, ToolCallID: "call_2", Content: "error: malformed arguments"},
			{Role: models.RoleAssistant},
		}, Tools: []models.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(
				`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","maximum":18446744073709551615}},"required":["path"]}`)},
			{Name: "noop"},
		}, Settings: models.Settings{Model: "other-model", Temperature: &temp, Seed: &seed, MaxOutputTokens: 256}},
	}
	for name, req := range requests {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, reply{body: textReply})
			m, _ := newModel(t, s, Config{})
			rendered, err := m.Render(req)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			again, _ := m.Render(req)
			if !bytes.Equal(rendered, again) {
				t.Fatalf("Render is not deterministic:\n%s\n%s", rendered, again)
			}
			if bytes.Contains(rendered, []byte(testKey)) {
				t.Fatal("Render output contains the API key")
			}
			if _, err := m.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !bytes.Equal(s.body(0), rendered) {
				t.Errorf("sent body differs from Render:\nsent   %s\nrender %s", s.body(0), rendered)
			}
		})
	}
}

func TestRenderMapping(t *testing.T) {
	s := newServer(t, reply{body: textReply})
	temp, topP := 0.0, 0.9
	seed := int64(7)
	req := models.Request{
		Messages: []models.Message{
			{Role: models.RoleUser, Content: "go"},
			{Role: models.RoleAssistant, ToolCalls: []models.ToolCall{{ID: "c1", Name: "f", Args: `{"a":1`}}},
			{Role: models.RoleTool, ToolCallID: "c1", Content: "out"},
		},
		Tools:    []models.ToolSpec{{Name: "f", Description: "does f", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer","minimum":-3,"multipleOf":0.5}}}`)}},
		Settings: models.Settings{Temperature: &temp, Seed: &seed, MaxOutputTokens: 10, TopP: &topP, ReasoningEffort: "low"},
	}
	want := `{"messages":[{"content":"go","role":"user"},` +
		`{"tool_calls":[{"id":"c1","function":{"arguments":"{\"a\":1","name":"f"},"type":"function"}],"role":"assistant"},` +
		`{"content":"out","tool_call_id":"c1","role":"tool"}],"model":"gpt-test",%s"seed":7,"temperature":0,"top_p":0.9,"reasoning_effort":"low",` +
		`"tools":[{"function":{"name":"f","description":"does f","parameters":{"properties":{"a":{"minimum":-3,"multipleOf":0.5,"type":"integer"}},"type":"object"}},"type":"function"}]}`
	for field, cfg := range map[string]Config{
		`"max_completion_tokens":10,`: {},
		`"max_tokens":10,`:            {MaxTokensField: MaxTokens},
	} {
		m, _ := newModel(t, s, cfg)
		got, err := m.Render(req)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		if w := fmt.Sprintf(want, field); string(got) != w {
			t.Errorf("Render (%s):\n got %s\nwant %s", field, got, w)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	s := newServer(t, reply{body: textReply})
	m, _ := newModel(t, s, Config{})
	noModel, err := New(Config{BaseURL: s.srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		m    *Model
		req  models.Request
		kind models.ErrorKind
		msg  string
	}{
		{"no model", noModel, simpleRequest(), models.ErrConfig, "no model"},
		{"unknown role", m, models.Request{Messages: []models.Message{{Role: "developer", Content: "x"}}}, models.ErrBadRequest, `message 0: unknown role "developer"`},
		{"bad schema", m, models.Request{Tools: []models.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"type":`)}}}, models.ErrBadRequest, "tool 0 (t): parameters: not a JSON object"},
		{"schema not an object", m, models.Request{Tools: []models.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}, models.ErrBadRequest, "tool 0 (t): parameters: not a JSON object"},
		{"schema null", m, models.Request{Tools: []models.ToolSpec{{Name: "t", Parameters: json.RawMessage(`null`)}}}, models.ErrBadRequest, "not a JSON object: null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.m.Render(tt.req); models.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Render: %v, want %s containing %q", err, tt.kind, tt.msg)
			}
			if _, err := tt.m.Complete(context.Background(), tt.req); models.KindOf(err) != tt.kind {
				t.Errorf("Complete: %v, want %s", err, tt.kind)
			}
			if tt.m.Reserve(tt.req) != 0 {
				t.Error("Reserve of a request that does not render is not 0")
			}
		})
	}
	if s.count() != 0 {
		t.Errorf("%d requests sent for requests that do not render", s.count())
	}
}

func TestCompleteToolCalls(t *testing.T) {
	s := newServer(t, reply{body: toolCallReply})
	m, _ := newModel(t, s, Config{InputPrice: 5}) // the output price is unknown, so the cost is
	got, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := models.Reply{
		Calls: []models.ToolCall{
			{ID: "call_1", Name: "read_file", Args: `{"path": "README.md"}`},
			{ID: "call_2", Name: "write_file", Args: `{"path": "x", "content": `},
		},
		Usage:  &models.Usage{InputTokens: 120, OutputTokens: 40}, // Cost nil: unknown
		Finish: models.FinishToolCalls,
		Model:  "gpt-test",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Complete:\n got %+v\nwant %+v", got, want)
	}
}

func TestCompleteReplyShapes(t *testing.T) {
	const head = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,`
	tests := []struct {
		name string
		body string
		want models.Reply
	}{
		{"no usage", head + `"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}]}`,
			models.Reply{Text: "a", Finish: "stop", Model: "m"}},
		{"null usage", head + `"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],"usage":null}`,
			models.Reply{Text: "a", Finish: "stop", Model: "m"}},
		{"partial usage is unknown", head + `"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5}}`,
			models.Reply{Text: "a", Finish: "stop", Model: "m"}},
		{"zero usage is known", head + `"message":{"role":"assistant","content":""},"finish_reason":"length"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			models.Reply{Finish: "length", Model: "m", Usage: &models.Usage{}}},
		{"cached and reasoning tokens apart", head + `"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":300,"total_tokens":1200,"prompt_tokens_details":{"cached_tokens":512},"completion_tokens_details":{"reasoning_tokens":256}}}`,
			models.Reply{Text: "a", Finish: "stop", Model: "m", Usage: &models.Usage{InputTokens: 900, OutputTokens: 300, CachedInputTokens: u64(512), ReasoningTokens: u64(256)}}},
		{"zero cached tokens are known, absent reasoning is not", head + `"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{}}}`,
			models.Reply{Text: "a", Finish: "stop", Model: "m", Usage: &models.Usage{InputTokens: 9, OutputTokens: 3, CachedInputTokens: u64(0)}}},
		{"no finish reason with calls", head + `"message":{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
			models.Reply{Calls: []models.ToolCall{{ID: "x", Name: "f", Args: "{}"}}, Finish: "tool_calls", Model: "m"}},
		{"arguments sent as an object", head + `"message":{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":{"b":1}}}]},"finish_reason":"tool_calls"}]}`,
			models.Reply{Calls: []models.ToolCall{{ID: "x", Name: "f", Args: `{"b":1}`}}, Finish: "tool_calls", Model: "m"}},
		{"refusal field", head + `"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":6,"total_tokens":15}}`,
			models.Reply{Text: "I can't help with that.", Finish: "refusal", Model: "m", Usage: &models.Usage{InputTokens: 9, OutputTokens: 6}}},
		{"content filter", head + `"message":{"role":"assistant","content":"partial"},"finish_reason":"content_filter"}]}`,
			models.Reply{Text: "partial", Finish: "refusal", Model: "m"}},
		{"unknown finish passes through", head + `"message":{"role":"assistant","content":"a"},"finish_reason":"eos"}]}`,
			models.Reply{Text: "a", Finish: "eos", Model: "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, reply{body: tt.body})
			m, _ := newModel(t, s, Config{})
			got, err := m.Complete(context.Background(), simpleRequest())
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Complete:\n got %+v (usage %v)\nwant %+v (usage %v)", got, got.Usage, tt.want, tt.want.Usage)
			}
			if s.count() != 1 {
				t.Errorf("%d requests, want 1 (a reply is never retried)", s.count())
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{"http date", map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t,
				reply{status: 429, header: tt.header, body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
				reply{body: textReply})
			m, waits := newModel(t, s, Config{})
			m.now = func() time.Time { return now }
			got, err := m.Complete(context.Background(), simpleRequest())
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got.Text != "Hi." || s.count() != 2 {
				t.Errorf("reply %q after %d requests, want Hi. after 2", got.Text, s.count())
			}
			if len(*waits) != 1 || (*waits)[0] < tt.want || (*waits)[0] > m.cfg.MaxBackoff {
				t.Errorf("waits %v, want one wait of at least %s and at most %s", *waits, tt.want, m.cfg.MaxBackoff)
			}
			if !bytes.Equal(s.body(0), s.body(1)) {
				t.Error("the retry sent a different body")
			}
		})
	}
}

func TestRetryAfterBeyondCap(t *testing.T) {
	s := newServer(t, reply{status: 429, header: map[string]string{"Retry-After": "120"}, body: `{"error":{"message":"slow down"}}`})
	m, waits := newModel(t, s, Config{MaxBackoff: 30 * time.Second})
	_, err := m.Complete(context.Background(), simpleRequest())
	var me *models.Error
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a *models.Error", err)
	}
	if me.Kind != models.ErrRateLimited || me.Attempts != 1 || me.Status != 429 || me.RetryAfter != 120*time.Second {
		t.Errorf("error %+v, want rate_limited, 1 attempt, HTTP 429, retry after 2m0s", me)
	}
	if len(*waits) != 0 || s.count() != 1 {
		t.Errorf("waits %v and %d requests, want none and 1", *waits, s.count())
	}
	if !strings.Contains(err.Error(), "more than the 30s cap") {
		t.Errorf("error %q does not say the wait is beyond the cap", err)
	}
}

func TestRetryServerErrorsThenSuccess(t *testing.T) {
	fail := reply{status: 500, body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`}
	s := newServer(t, fail, fail, fail, reply{body: textReply})
	m, waits := newModel(t, s, Config{MaxBackoff: 30 * time.Second})
	got, err := m.Complete(context.Background(), simpleRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Text != "Hi." || s.count() != 4 {
		t.Errorf("reply %q after %d requests, want Hi. after 4", got.Text, s.count())
	}
	// Exponential backoff from 500ms with equal jitter (jitter fixed at 0.5).
	want := []time.Duration{375 * time.Millisecond, 750 * time.Millisecond, 1500 * time.Millisecond}
	if !reflect.DeepEqual(*waits, want) {
		t.Errorf("waits %v, want %v", *waits, want)
	}
}

func TestPersistentFailures(t *testing.T) {
	tests := []struct {
		name   string
		rep    reply
		kind   models.ErrorKind
		status int
	}{
		{"503", reply{status: 503, body: "upstream connect error"}, models.ErrUnavailable, 503},
		{"429", reply{status: 429, body: `{"error":{"message":"Rate limit reached"}}`}, models.ErrRateLimited, 429},
		{"connection dropped", reply{drop: true}, models.ErrUnavailable, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.rep)
			m, waits := newModel(t, s, Config{MaxRetries: 3})
			_, err := m.Complete(context.Background(), simpleRequest())
			var me *models.Error
			if !errors.As(err, &me) {
				t.Fatalf("got %v, want a *models.Error", err)
			}
			if me.Kind != tt.kind || me.Attempts != 4 || me.Status != tt.status || me.Provider != "openai" {
				t.Errorf("error %+v, want %s with 4 attempts and status %d", me, tt.kind, tt.status)
			}
			if s.count() != 4 || len(*waits) != 3 {
				t.Errorf("%d requests and %d waits, want 4 and 3", s.count(), len(*waits))
			}
			if !strings.Contains(err.Error(), "after 4 attempts") {
				t.Errorf("error %q does not count the attempts", err)
			}
		})
	}
}

func TestNoRetries(t *testing.T) {
	s := newServer(t, reply{status: 503})
	m, waits := newModel(t, s, Config{MaxRetries: -1})
	_, err := m.Complete(context.Background(), simpleRequest())
	var me *models.Error
	if !errors.As(err, &me) || me.Kind != models.ErrUnavailable || me.Attempts != 1 {
		t.Fatalf("got %v, want unavailable after 1 attempt", err)
	}
	if s.count() != 1 || len(*waits) != 0 {
		t.Errorf("%d requests, %d waits; want 1 and 0", s.count(), len(*waits))
	}
}

func TestConnectionDropThenSuccess(t *testing.T) {
	s := newServer(t, reply{drop: true}, reply{body: textReply})
	m, waits := newModel(t, s, Config{})
	got, err := m.Complete(context.Background(), simpleRequest())
	if err != nil || got.Text != "Hi." {
		t.Fatalf("got %+v, %v; want the reply after a retry", got, err)
	}
	if s.count() != 2 || len(*waits) != 1 {
		t.Errorf("%d requests, %d waits; want 2 and 1", s.count(), len(*waits))
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	tests := []struct {
		name   string
		rep    reply
		kind   models.ErrorKind
		status int
		msg    string
	}{
		{"400", reply{status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
			models.ErrBadRequest, 400, "maximum context length is 8192 tokens"},
		{"404 unknown model", reply{status: 404, body: `{"error":{"message":"The model 'nope' does not exist","type":"invalid_request_error","code":"model_not_found"}}`},
			models.ErrBadRequest, 404, "does not exist"},
		{"408 is a client error here", reply{status: 408, body: "Request Timeout"}, models.ErrBadRequest, 408, "Request Timeout"},
		{"422 with a plain body", reply{status: 422, header: map[string]string{"Content-Type": "text/plain"}, body: "unprocessable"},
			models.ErrBadRequest, 422, "unprocessable"},
		{"400 content filter", reply{status: 400, body: `{"error":{"message":"The response was filtered due to the prompt triggering a content management policy.","type":null,"param":"prompt","code":"content_filter","status":400}}`},
			models.ErrRefused, 400, "the provider refused the request (content_filter)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.rep)
			m, waits := newModel(t, s, Config{})
			_, err := m.Complete(context.Background(), simpleRequest())
			var me *models.Error
			if !errors.As(err, &me) {
				t.Fatalf("got %v, want a *models.Error", err)
			}
			if me.Kind != tt.kind || me.Attempts != 1 || me.Status != tt.status || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %+v (%q), want %s, 1 attempt, status %d, containing %q", me, err, tt.kind, tt.status, tt.msg)
			}
			if s.count() != 1 || len(*waits) != 0 {
				t.Errorf("%d requests, %d waits; want 1 and 0", s.count(), len(*waits))
			}
		})
	}
}

func TestBadResponses(t *testing.T) {
	tests := []struct {
		name string
		rep  reply
		msg  string
	}{
		{"malformed JSON", reply{body: `{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"Hi`}, "the body is not JSON"},
		{"not JSON at all", reply{header: map[string]string{"Content-Type": "text/html"}, body: "<html>gateway</html>"}, "the body is not JSON"},
		{"empty body", reply{body: ""}, "the body is not JSON"},
		{"no choices", reply{body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}`}, "no choices"},
		{"an error inside a 200", reply{body: `{"error":{"message":"model is overloaded"}}`}, "no choices; the provider says: model is overloaded"},
		{"choice without message", reply{body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop"}]}`}, "no message"},
		{"custom tool call", reply{body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"x","type":"custom","custom":{"name":"f","input":"i"}}]},"finish_reason":"tool_calls"}]}`}, `type "custom"`},
		{"negative usage", reply{body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-1,"completion_tokens":2}}`}, "negative token counts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.rep)
			m, _ := newModel(t, s, Config{})
			_, err := m.Complete(context.Background(), simpleRequest())
			var me *models.Error
			if !errors.As(err, &me) || me.Kind != models.ErrBadResponse || me.Attempts != 1 {
				t.Fatalf("got %v, want bad_response after 1 attempt", err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if s.count() != 1 {
				t.Errorf("%d requests, want 1", s.count())
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	s := newServer(t, reply{hang: true})
	m, waits := newModel(t, s, Config{Timeout: 20 * time.Millisecond})
	_, err := m.Complete(context.Background(), simpleRequest())
	var me *models.Error
	if !errors.As(err, &me) || me.Kind != models.ErrTimeout || me.Attempts != 1 {
		t.Fatalf("got %v, want a timeout after 1 attempt", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not match context.DeadlineExceeded", err)
	}
	if s.count() != 1 || len(*waits) != 0 {
		t.Errorf("%d requests, %d waits; want 1 and 0 (a timeout is not retried)", s.count(), len(*waits))
	}
}

func TestCallerContext(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		s := newServer(t, reply{hang: true})
		m, _ := newModel(t, s, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := m.Complete(ctx, simpleRequest())
			done <- err
		}()
		for s.count() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) || models.KindOf(err) != "" {
			t.Errorf("got %v (kind %q), want a plain context.Canceled", err, models.KindOf(err))
		}
	})
	t.Run("deadline", func(t *testing.T) {
		s := newServer(t, reply{hang: true})
		m, _ := newModel(t, s, Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := m.Complete(ctx, simpleRequest())
		if models.KindOf(err) != models.ErrTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want ErrTimeout wrapping context.DeadlineExceeded", err)
		}
	})
	t.Run("cancel during the backoff", func(t *testing.T) {
		s := newServer(t, reply{status: 503})
		m, _ := newModel(t, s, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		m.sleep = func(context.Context, time.Duration) error {
			cancel()
			return ctx.Err()
		}
		_, err := m.Complete(ctx, simpleRequest())
		if !errors.Is(err, context.Canceled) || s.count() != 1 {
			t.Errorf("got %v after %d requests, want context.Canceled after 1", err, s.count())
		}
	})
}

func TestKeyNeverLeaks(t *testing.T) {
	// A hostile server that echoes the Authorization header everywhere.
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		// The first path segment says how to fail: /401/v1/chat/completions.
		first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		status := map[string]int{"401": 401, "500": 500, "200": 200, "content": 400, "clipped": 200, "clipped-error": 400}[first]
		switch first {
		case "clipped": // the key straddles the point where quoted bodies are cut
			w.WriteHeader(200)
			fmt.Fprintf(w, "%s%s and more", strings.Repeat("x", 100), auth)
			return
		case "clipped-error":
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":"%s%s and more"}}`, strings.Repeat("x", 280), auth)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		switch status {
		case 401:
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","code":"invalid_api_key"}}`, auth)
		case 500:
			fmt.Fprintf(w, "internal error for %s", auth)
		case 400:
			fmt.Fprintf(w, `{"error":{"message":"filtered for %s","code":"content_filter"}}`, auth)
		default:
			fmt.Fprintf(w, `{"choices": [ %s`, auth)
		}
	})
	srv := httptest.NewServer(echo)
	defer srv.Close()

	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	for _, path := range []string{"401", "500", "200", "content", "clipped", "clipped-error"} {
		cfg := Config{BaseURL: srv.URL + "/" + path + "/v1", Model: "m", APIKey: testKey, MaxRetries: 1}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m.sleep = func(context.Context, time.Duration) error { return nil }
		_, err = m.Complete(context.Background(), simpleRequest())
		if err == nil {
			t.Fatalf("%s: no error", path)
		}
		if models.KindOf(err) == "" {
			t.Errorf("%s: untyped error %v", path, err)
		}
		for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(text, testKey[:12]) {
				t.Errorf("%s: the key leaked into the error: %s", path, text)
			}
		}
		if !strings.Contains(err.Error(), redactedMessage[:3]) { // "[re": the marker may be clipped
			t.Errorf("%s: error %q shows no redaction: was the key echoed at all?", path, err)
		}
		logger.Info("config", "cfg", cfg, "model", m)
		for _, text := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v %+v %#v", m, m, *m)} {
			if strings.Contains(text, testKey) {
				t.Errorf("the key leaked into a printed config or model: %s", text)
			}
		}
		rendered, _ := m.Render(simpleRequest())
		if bytes.Contains(rendered, []byte(testKey)) {
			t.Error("the key leaked into Render's output")
		}
	}
	if strings.Contains(logs.String(), testKey) || !strings.Contains(logs.String(), `"api_key":"[redacted]"`) {
		t.Errorf("slog output leaks the key or hides the redaction: %s", logs.String())
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		msg  string
	}{
		{"not a URL", Config{BaseURL: "::"}, "is not an http(s) URL"},
		{"no scheme", Config{BaseURL: "127.0.0.1:8000/v1"}, "is not an http(s) URL"},
		{"credentials in URL", Config{BaseURL: "http://user:pw@127.0.0.1/v1"}, "must not carry credentials"},
		{"no key for OpenAI", Config{}, "no API key for api.openai.com"},
		{"negative timeout", Config{BaseURL: "http://127.0.0.1/v1", Timeout: -time.Second}, "negative timeout"},
		{"bad max tokens field", Config{BaseURL: "http://127.0.0.1/v1", MaxTokensField: "n_predict"}, `max tokens field "n_predict"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if models.KindOf(err) != models.ErrConfig || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("New: %v, want a config error containing %q", err, tt.msg)
			}
		})
	}
	m, err := New(Config{BaseURL: "http://127.0.0.1:11434/v1"})
	if err != nil {
		t.Fatalf("New without key for a local server: %v", err)
	}
	if m.cfg.Timeout != DefaultTimeout || m.cfg.MaxRetries != DefaultMaxRetries || m.cfg.MaxBackoff != DefaultMaxBackoff ||
		m.cfg.BytesPerToken != DefaultBytesPerToken || m.cfg.ReserveOutputTokens != DefaultReserveOutputTokens ||
		m.cfg.MaxTokensField != MaxCompletionTokens || m.Provider() != "openai" {
		t.Errorf("defaults not applied: %+v", m.cfg)
	}
}

func TestFromEnv(t *testing.T) {
	t.Run("factline variables", func(t *testing.T) {
		t.Setenv(EnvBaseURL, "http://127.0.0.1:8000/v1")
		t.Setenv(EnvOpenAIBase, "http://127.0.0.1:9999/v1")
		t.Setenv(EnvModel, "qwen")
		t.Setenv(EnvAPIKey, "k1")
		t.Setenv(EnvOpenAIKey, "k2")
		t.Setenv(EnvInputPrice, "150000")
		t.Setenv(EnvOutputPrice, "600000")
		t.Setenv(EnvMaxTokens, MaxTokens)
		got, err := Config{}.FromEnv()
		if err != nil {
			t.Fatal(err)
		}
		want := Config{BaseURL: "http://127.0.0.1:8000/v1", Model: "qwen", APIKey: "k1", InputPrice: 150000, OutputPrice: 600000, MaxTokensField: MaxTokens}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("FromEnv = %+v, want %+v", got, want)
		}
	})
	t.Run("OpenAI fallbacks and explicit values win", func(t *testing.T) {
		t.Setenv(EnvBaseURL, "")
		t.Setenv(EnvOpenAIBase, "http://127.0.0.1:9999/v1")
		t.Setenv(EnvModel, "env-model")
		t.Setenv(EnvAPIKey, "")
		t.Setenv(EnvOpenAIKey, "k2")
		t.Setenv(EnvInputPrice, "7")
		t.Setenv(EnvOutputPrice, "")
		t.Setenv(EnvMaxTokens, MaxTokens)
		got, err := Config{Model: "mine", InputPrice: 3, MaxTokensField: MaxCompletionTokens}.FromEnv()
		if err != nil {
			t.Fatal(err)
		}
		want := Config{BaseURL: "http://127.0.0.1:9999/v1", Model: "mine", APIKey: "k2", InputPrice: 3, MaxTokensField: MaxCompletionTokens}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("FromEnv = %+v, want %+v", got, want)
		}
	})
	t.Run("bad price", func(t *testing.T) {
		t.Setenv(EnvInputPrice, "1.5")
		if _, err := (Config{}).FromEnv(); err == nil || !strings.Contains(err.Error(), EnvInputPrice) {
			t.Errorf("FromEnv with a bad price: %v", err)
		}
	})
}

func TestReserve(t *testing.T) {
	s := newServer(t, reply{body: textReply})
	unpriced, _ := newModel(t, s, Config{})
	req := simpleRequest()
	if got := unpriced.Reserve(req); got != 0 {
		t.Errorf("Reserve with unknown prices = %d, want 0", got)
	}
	half, _ := newModel(t, s, Config{InputPrice: 1_000_000})
	if got := half.Reserve(req); got != 0 {
		t.Errorf("Reserve with an unknown output price = %d, want 0", got)
	}
	priced, _ := newModel(t, s, Config{InputPrice: 1_000_000, OutputPrice: 3_000_000, BytesPerToken: 4, ReserveOutputTokens: 1000})
	body, err := priced.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	in := (uint64(len(body)) + 3) / 4
	if got, want := priced.Reserve(req), in*1+1000*3; got != want {
		t.Errorf("Reserve without a max = %d, want %d", got, want)
	}
	req.Settings.MaxOutputTokens = 50
	body, _ = priced.Render(req)
	in = (uint64(len(body)) + 3) / 4
	if got, want := priced.Reserve(req), in*1+50*3; got != want {
		t.Errorf("Reserve with a max = %d, want %d", got, want)
	}
}

func TestCost(t *testing.T) {
	tests := []struct {
		in, out, inPrice, outPrice, want uint64
	}{
		{0, 0, 5, 5, 0},
		{1, 0, 1, 0, 1},             // rounds up
		{1_000_000, 0, 7, 0, 7},     // exact
		{1_000_001, 0, 7, 0, 8},     // rounds up
		{500_000, 500_000, 2, 4, 3}, // 1e6 + 2e6 = 3e6
		{19, 3, 2_000_000, 10_000_000, 68},
		{math.MaxUint64, 0, 1, 0, math.MaxUint64/1_000_000 + 1},
		{math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64}, // saturates
		{math.MaxUint64, 0, 2_000_000, 0, math.MaxUint64},                                // quotient overflows
	}
	for _, tt := range tests {
		if got := cost(tt.in, tt.out, tt.inPrice, tt.outPrice); got != tt.want {
			t.Errorf("cost(%d, %d, %d, %d) = %d, want %d", tt.in, tt.out, tt.inPrice, tt.outPrice, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	m, err := New(Config{BaseURL: "http://127.0.0.1/v1", MaxBackoff: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []float64{0, 0.999999} {
		m.jitter = func() float64 { return j }
		for n := 1; n <= 40; n++ {
			d := min(500*time.Millisecond<<min(n-1, 20), 10*time.Second)
			if got := m.backoff(n, 0); got < d/2 || got > d {
				t.Errorf("jitter %v: backoff(%d) = %s, want within [%s, %s]", j, n, got, d/2, d)
			}
		}
		for _, ra := range []time.Duration{time.Millisecond, 2 * time.Second, 10 * time.Second} {
			if got := m.backoff(1, ra); got < ra || got > 10*time.Second {
				t.Errorf("jitter %v: backoff with Retry-After %s = %s, want within [%s, 10s]", j, ra, got, ra)
			}
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	m, err := New(Config{BaseURL: "http://127.0.0.1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	m.now = func() time.Time { return now }
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "5"}, 5 * time.Second},
		{map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": "-3"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After-Ms": "20"}, 20 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "bad", "Retry-After": "1"}, time.Second},
		{map[string]string{"Retry-After": "1e300"}, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := m.retryAfter(h); got != tt.want {
			t.Errorf("retryAfter(%v) = %s, want %s", tt.header, got, tt.want)
		}
	}
}

func u64(v uint64) *uint64 { return &v }

// A 404 is almost always a base URL without its API root (Ollama's
// http://127.0.0.1:11434 for …/v1) or a model the server does not serve,
// and such servers answer only "404 page not found": the error names the
// URL that was not found, so the mistake can be seen.
func TestA404NamesTheURLItPosted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "404 page not found", http.StatusNotFound)
	}))
	defer srv.Close()
	m, err := New(Config{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), models.Request{Messages: []models.Message{{Role: models.RoleUser, Content: "hi"}}})
	if models.KindOf(err) != models.ErrBadRequest {
		t.Fatalf("got %v, want bad_request", err)
	}
	for _, want := range []string{"404 page not found", "POST " + srv.URL + "/chat/completions", "base URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
}

// A provider's answer is read with a bound: a longer one fails the call
// as a bad response naming the bound, asked once (asking again would get
// the same answer), whether its length is said up front or not; an
// answer of exactly the bound is read.
func TestAReplyOverTheBodyBoundIsABadResponse(t *testing.T) {
	answer := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("long ", 400) + `"},"finish_reason":"stop"}]}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked %v", chunked), func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				if chunked {
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush() // no Content-Length: the length is known only at the end
				}
				_, _ = io.WriteString(w, answer)
			}))
			defer srv.Close()
			for _, limit := range []int64{int64(len(answer)) - 1, int64(len(answer))} {
				m, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", APIKey: testKey, MaxReplyBytes: limit})
				if err != nil {
					t.Fatal(err)
				}
				before := calls.Load()
				r, err := m.Complete(context.Background(), simpleRequest())
				if limit == int64(len(answer)) {
					if err != nil || !strings.HasPrefix(r.Text, "long long") {
						t.Fatalf("an answer of exactly the bound: %v, %.20q", err, r.Text)
					}
					continue
				}
				var me *models.Error
				if !errors.As(err, &me) || me.Kind != models.ErrBadResponse {
					t.Fatalf("got %v, want bad_response", err)
				}
				if want := fmt.Sprintf("%d-byte limit", limit); !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name the bound %q", err, want)
				}
				if n := calls.Load() - before; n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
			}
		})
	}
}
