package agentproxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/agentproxy"
)

// streamedCalls are a streamed request of each wire, by its path.
var streamedCalls = []struct{ name, path, body string }{
	{"chat", agentproxy.ChatPath, `{"model":"x","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	{"responses", agentproxy.ResponsesPath, `{"model":"x","stream":true,"input":"hi"}`},
	{"messages", agentproxy.MessagesPath, `{"model":"x","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
}

// startWith starts an endpoint for call whose streams' headers leave
// after delay.
func startWith(t *testing.T, call agentproxy.Call, delay time.Duration, log *slog.Logger) *agentproxy.Server {
	t.Helper()
	s, err := agentproxy.Start(call, "scripted-model", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.SetStreamHeadersAfter(delay); err != nil {
		t.Fatal(err)
	}
	return s
}

// send posts body to path with the endpoint's token (in both the
// headers the wires' clients use) and returns the response as soon as its
// headers arrive.
func send(t *testing.T, ctx context.Context, s *agentproxy.Server, path, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Origin()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token())
	return http.DefaultClient.Do(req)
}

// A streamed call whose model has not answered by the delay gets its
// status and headers then, as a provider sends them at once, and the
// answer when the model gives it: the openai and Anthropic node clients
// stop their timeout at the headers, and an agent whose timeout is
// shorter than the model's latency was cut off and retried here (a new
// turn) though it never was at the provider. Found with LangChain.js, a
// 2 s timeout and a model answering in 4 s. The model here blocks until
// the test has seen the headers (or, on a failing endpoint, a bound
// that only ends the test).
func TestStreamHeadersLeaveBeforeTheModelAnswers(t *testing.T) {
	for _, w := range streamedCalls {
		t.Run(w.name, func(t *testing.T) {
			release := make(chan struct{})
			var answered atomic.Bool
			s := startWith(t, func(context.Context, models.Request) (models.Reply, error) {
				select {
				case <-release:
				case <-time.After(30 * time.Second):
				}
				answered.Store(true)
				return models.Reply{Text: "late answer", Finish: models.FinishStop, Usage: &models.Usage{InputTokens: 3, OutputTokens: 2}}, nil
			}, agentproxy.DefaultStreamHeadersAfter, nil)
			resp, err := send(t, context.Background(), s, w.path, w.body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if answered.Load() {
				t.Fatalf("the headers (HTTP %d) arrived only once the model had answered", resp.StatusCode)
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("headers before the answer: HTTP %d, Content-Type %q; want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			close(release)
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "late answer") {
				t.Fatalf("the stream lacks the answer:\n%s", b)
			}
		})
	}
}

// streamEvents reads a stream's events: their names and data, the
// comment lines left out, as an SSE parser reads them.
func streamEvents(t *testing.T, body io.Reader) (names []string, data []string) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			names, data = append(names, name), append(data, strings.TrimPrefix(line, "data: "))
			name = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names, data
}

// A refusal (or a model's error) that comes once the headers have gone
// cannot change the status: it is sent as the wire's own in-stream error,
// in the shape the provider sends and its SDK reads as an error, and the
// stream ends. Chat Completions: a data chunk holding an error object;
// Responses: an error event (code, message, param, sequence_number);
// Messages: an error event holding the error's type and message.
func TestRefusalAfterTheHeadersIsTheWiresStreamError(t *testing.T) {
	refusal := &agentproxy.Refusal{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: "insufficient_quota", Message: "the run's budget is spent"}
	for _, fail := range []struct {
		name string
		err  error
		// per wire: the Chat/Responses code and the Anthropic type.
		code, anthropicType, msg string
	}{
		{"refusal", refusal, "insufficient_quota", "rate_limit_error", "the run's budget is spent"},
		{"model error", errors.New("upstream exploded"), "model_error", "api_error", "upstream exploded"},
	} {
		for _, w := range streamedCalls {
			t.Run(fail.name+"/"+w.name, func(t *testing.T) {
				s := startWith(t, func(context.Context, models.Request) (models.Reply, error) {
					return models.Reply{}, fail.err
				}, 0, nil)
				resp, err := send(t, context.Background(), s, w.path, w.body)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
					t.Fatalf("HTTP %d %q, want the stream's 200 sent before the call's end", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				names, data := streamEvents(t, resp.Body)
				if len(data) != 1 {
					t.Fatalf("events %q %q, want the one error event", names, data)
				}
				var got map[string]any
				if err := json.Unmarshal([]byte(data[0]), &got); err != nil {
					t.Fatalf("error event %s: %v", data[0], err)
				}
				switch w.name {
				case "chat":
					e, _ := got["error"].(map[string]any)
					if names[0] != "" || e == nil || e["code"] != fail.code || !strings.Contains(data[0], fail.msg) {
						t.Fatalf("chat error chunk %q %s, want data holding an error object with code %s", names[0], data[0], fail.code)
					}
				case "responses":
					if names[0] != "error" || got["type"] != "error" || got["code"] != fail.code || got["sequence_number"] != float64(0) || !strings.Contains(data[0], fail.msg) {
						t.Fatalf("responses error %q %s, want event error {type error, code %s, message, sequence_number 0}", names[0], data[0], fail.code)
					}
				case "messages":
					e, _ := got["error"].(map[string]any)
					if names[0] != "error" || got["type"] != "error" || e == nil || e["type"] != fail.anthropicType || !strings.Contains(data[0], fail.msg) {
						t.Fatalf("messages error %q %s, want event error {type error, error {type %s, message}}", names[0], data[0], fail.anthropicType)
					}
				}
			})
		}
	}
}

// A streamed call refused before the delay keeps its status and
// x-should-retry: false, as every refusal was answered before.
func TestFastRefusalOfAStreamKeepsItsStatus(t *testing.T) {
	for _, w := range streamedCalls {
		t.Run(w.name, func(t *testing.T) {
			s := startWith(t, func(context.Context, models.Request) (models.Reply, error) {
				return models.Reply{}, &agentproxy.Refusal{Status: http.StatusConflict, Type: "invalid_request_error", Code: "run_ended", Message: "the run has ended"}
			}, time.Hour, nil)
			resp, err := send(t, context.Background(), s, w.path, w.body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusConflict || resp.Header.Get("X-Should-Retry") != "false" || !strings.Contains(string(b), "run_ended") {
				t.Fatalf("HTTP %d x-should-retry %q %s, want 409 false run_ended", resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
			}
		})
	}
}

// The delay is validated: a negative one is refused with a typed error
// naming it; 0 (at once) and a positive one are taken.
func TestStreamHeadersAfterIsValidated(t *testing.T) {
	s := start(t, answering("x", new(int)))
	err := s.SetStreamHeadersAfter(-time.Second)
	var de *agentproxy.DelayError
	if !errors.As(err, &de) || de.Value != -time.Second || !strings.Contains(err.Error(), "StreamHeadersAfter") {
		t.Fatalf("a negative delay: %v, want a *DelayError naming StreamHeadersAfter", err)
	}
	for _, d := range []time.Duration{0, time.Millisecond, time.Minute} {
		if err := s.SetStreamHeadersAfter(d); err != nil {
			t.Fatalf("delay %v refused: %v", d, err)
		}
	}
}

// An agent that hangs up on a stream whose headers have gone, before its
// answer, is still warned about.
func TestAnAgentThatHangsUpOnAnOpenStreamIsLogged(t *testing.T) {
	msgs := make(chan string, 16)
	s := startWith(t, func(ctx context.Context, _ models.Request) (models.Reply, error) {
		// The model takes longer than the client waits; the bound only
		// ends a failing test, whose headers wait for the answer.
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
		}
		return models.Reply{Text: "late", Finish: models.FinishStop}, nil
	}, 0, slog.New(chanHandler{msgs}))
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := send(t, ctx, s, agentproxy.ChatPath, streamedCalls[0].body)
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the client gives up after the headers
	resp.Body.Close()
	if !logged(msgs, "hung up before its answer", 30*time.Second) {
		t.Fatal("the agent hung up on its stream before its answer, and nothing was logged")
	}
}

// While the model works, an open stream is sent SSE comment lines, which
// an SSE parser ignores (the SDKs' decoders were read to confirm it),
// and the answer follows them whole. The model answers once the test has
// read a keep-alive line (the bound only ends a failing test).
func TestAnOpenStreamIsKeptAliveWithComments(t *testing.T) {
	release := make(chan struct{})
	s := startWith(t, func(context.Context, models.Request) (models.Reply, error) {
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		return models.Reply{Text: "after the keep-alives", Finish: models.FinishStop}, nil
	}, 0, nil)
	s.SetKeepAliveEvery(time.Millisecond)
	resp, err := send(t, context.Background(), s, agentproxy.ChatPath, streamedCalls[0].body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if err != nil || line != ": keep-alive\n" {
		t.Fatalf("first line %q (%v), want the keep-alive comment", line, err)
	}
	close(release)
	names, data := streamEvents(t, r)
	if len(data) != 3 || !strings.Contains(data[0], "after the keep-alives") || data[2] != "[DONE]" || names[0] != "" {
		t.Fatalf("events %q %q, want the answer's chunks after the keep-alives", names, data)
	}
}
