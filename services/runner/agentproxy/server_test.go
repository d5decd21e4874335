package agentproxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/agentproxy"
)

// answering is a Call that answers every request with text and counts
// the calls that reached it.
func answering(text string, calls *int) agentproxy.Call {
	return func(_ context.Context, req models.Request) (models.Reply, error) {
		*calls++
		return models.Reply{Text: text, Finish: models.FinishStop, Usage: &models.Usage{InputTokens: 7, OutputTokens: 3}}, nil
	}
}

func start(t *testing.T, call agentproxy.Call) *agentproxy.Server {
	t.Helper()
	s, err := agentproxy.Start(call, "scripted-model", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func post(t *testing.T, base, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

const hello = `{"model":"x","messages":[{"role":"user","content":"hello"}]}`

// Each attempt's endpoint answers only its own token: another attempt's
// token, no token and a made-up one are refused with 401 in OpenAI's error
// shape, and none of them reaches the attempt.
func TestAnotherAttemptsTokenIsRefused(t *testing.T) {
	var aCalls, bCalls int
	a := start(t, answering("from a", &aCalls))
	b := start(t, answering("from b", &bCalls))
	if a.Token() == b.Token() || a.BaseURL() == b.BaseURL() {
		t.Fatalf("two attempts share a token or an address: %s %s", a.BaseURL(), b.BaseURL())
	}
	for name, tok := range map[string]string{"a's token": a.Token(), "none": "", "made up": "sk-123"} {
		status, body := post(t, b.BaseURL(), tok, hello)
		if status != http.StatusUnauthorized {
			t.Errorf("%s at b: HTTP %d %s, want 401", name, status, body)
		}
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != "invalid_api_key" {
			t.Errorf("%s at b: body %s is not an OpenAI invalid_api_key error", name, body)
		}
	}
	if bCalls != 0 {
		t.Fatalf("b's attempt was reached %d times by refused callers", bCalls)
	}
	status, body := post(t, b.BaseURL(), b.Token(), hello)
	if status != http.StatusOK || !strings.Contains(string(body), "from b") {
		t.Fatalf("b's own token: HTTP %d %s", status, body)
	}
	if aCalls != 0 || bCalls != 1 {
		t.Fatalf("calls a=%d b=%d, want 0 and 1", aCalls, bCalls)
	}
}

// A streamed call is answered in server-sent events: the text, each call,
// the finish reason, the usage when asked, then [DONE].
func TestStreamedReplyIsServerSentEvents(t *testing.T) {
	s := start(t, func(context.Context, models.Request) (models.Reply, error) {
		return models.Reply{Calls: []models.ToolCall{{ID: "c1", Name: "write_file", Args: `{"path":"a"}`}},
			Usage: &models.Usage{InputTokens: 5, OutputTokens: 2}}, nil
	})
	status, body := post(t, s.BaseURL(), s.Token(),
		`{"model":"x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)
	if status != http.StatusOK {
		t.Fatalf("HTTP %d %s", status, body)
	}
	var events []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	if len(events) != 5 || events[4] != "[DONE]" {
		t.Fatalf("events %q, want text, call, finish, usage, [DONE]", events)
	}
	for i, want := range []string{`"role":"assistant"`, `"name":"write_file"`, `"finish_reason":"tool_calls"`, `"prompt_tokens":5`} {
		if !strings.Contains(events[i], want) {
			t.Errorf("event %d %s lacks %s", i, events[i], want)
		}
	}
}

// A refusal is answered with its status in OpenAI's error shape.
func TestRefusalKeepsItsStatus(t *testing.T) {
	s := start(t, func(context.Context, models.Request) (models.Reply, error) {
		return models.Reply{}, &agentproxy.Refusal{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "budget spent"}
	})
	status, body := post(t, s.BaseURL(), s.Token(), hello)
	if status != 429 || !strings.Contains(string(body), `"code":"insufficient_quota"`) {
		t.Fatalf("HTTP %d %s", status, body)
	}
}
