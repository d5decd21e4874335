package clients_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/agentproxy"
)

// headersTimeout is the timeout of the clients below: it covers the wait
// for a response's headers alone, as the openai and @anthropic-ai/sdk node
// clients' timeout does (they stop it at the headers). It only has to be
// longer than the endpoint's delay (DefaultStreamHeadersAfter).
const headersTimeout = 5 * time.Second

// releasing is a transport that releases the model once a response's
// headers have arrived: the model answers only after the client's
// timeout would have fired had the headers waited for the answer.
type releasing struct {
	rt   http.RoundTripper
	once sync.Once
	ch   chan struct{}
}

func (r *releasing) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil {
		r.once.Do(func() { close(r.ch) })
	}
	return resp, err
}

// heldModel is a Call whose model answers text once released; the bound
// only ends a failing test (the client's timeout is far shorter).
func heldModel(release <-chan struct{}, text string) agentproxy.Call {
	return func(context.Context, models.Request) (models.Reply, error) {
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		return models.Reply{Text: text, Finish: models.FinishStop, Usage: &models.Usage{InputTokens: 5, OutputTokens: 2}}, nil
	}
}

func headersOnlyClient(release chan struct{}) *http.Client {
	return &http.Client{Transport: &releasing{rt: &http.Transport{ResponseHeaderTimeout: headersTimeout}, ch: release}}
}

// A streaming openai-go client whose timeout covers only the headers gets
// the answer of a model slower than that timeout, in one call: before, the
// headers waited for the model, the client timed out, and an agent's
// retry was a new turn.
func TestAStreamOutlastsAHeadersTimeoutOpenAI(t *testing.T) {
	release := make(chan struct{})
	var calls int
	var mu sync.Mutex
	held := heldModel(release, "slow but here")
	s := start(t, func(ctx context.Context, req models.Request) (models.Reply, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return held(ctx, req)
	})
	c := openai.NewClient(ooption.WithBaseURL(s.BaseURL()), ooption.WithAPIKey(s.Token()), ooption.WithMaxRetries(0),
		ooption.WithHTTPClient(headersOnlyClient(release)))
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-whatever",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var text string
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text += ch.Choices[0].Delta.Content
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	if text != "slow but here" || calls != 1 {
		t.Fatalf("text %q in %d calls, want the answer in one", text, calls)
	}
}

// The same with anthropic-sdk-go's streaming Messages client.
func TestAStreamOutlastsAHeadersTimeoutAnthropic(t *testing.T) {
	release := make(chan struct{})
	s := start(t, heldModel(release, "slow but here"))
	c := anthropic.NewClient(aoption.WithBaseURL(s.Origin()), aoption.WithAPIKey(s.Token()), aoption.WithMaxRetries(0),
		aoption.WithHTTPClient(headersOnlyClient(release)))
	stream := c.Messages.NewStreaming(context.Background(), messagesParams())
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "slow but here" {
		t.Fatalf("accumulated %s", msg.RawJSON())
	}
}

// refusedAfterHeaders starts an endpoint that sends a stream's headers at
// once and refuses the call: a budget spent after the headers went.
func refusedAfterHeaders(t *testing.T) *agentproxy.Server {
	s := start(t, func(context.Context, models.Request) (models.Reply, error) {
		return models.Reply{}, &agentproxy.Refusal{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: "insufficient_quota", Message: "the run's budget is spent"}
	})
	if err := s.SetStreamHeadersAfter(0); err != nil {
		t.Fatal(err)
	}
	return s
}

// A refusal after a stream's headers reaches each official client as its
// wire's in-stream error: openai-go's Chat Completions stream fails with
// it, anthropic-sdk-go's Messages stream fails with an APIError of type
// rate_limit_error, and openai-go's Responses stream yields an error event
// with the code (the SDK, as against OpenAI, leaves that event to the
// caller).
func TestARefusalAfterTheHeadersReachesTheClients(t *testing.T) {
	t.Run("chat", func(t *testing.T) {
		s := refusedAfterHeaders(t)
		c := openai.NewClient(ooption.WithBaseURL(s.BaseURL()), ooption.WithAPIKey(s.Token()), ooption.WithMaxRetries(0))
		stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-whatever",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		for stream.Next() {
			t.Errorf("a chunk %s before the error", stream.Current().RawJSON())
		}
		if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "insufficient_quota") {
			t.Fatalf("stream error %v, want the refusal's insufficient_quota", err)
		}
	})
	t.Run("responses", func(t *testing.T) {
		s := refusedAfterHeaders(t)
		stream := responsesSvc(s, s.Token()).NewStreaming(context.Background(), responsesParams())
		var got []string
		for stream.Next() {
			ev := stream.Current()
			got = append(got, ev.Type+" "+ev.Code+" "+ev.Message)
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != "error insufficient_quota the run's budget is spent" {
			t.Fatalf("events %q, want the one error event with the refusal's code and message", got)
		}
	})
	t.Run("messages", func(t *testing.T) {
		s := refusedAfterHeaders(t)
		stream := anthropicMessages(s, s.Token()).NewStreaming(context.Background(), messagesParams())
		for stream.Next() {
			t.Errorf("an event %s before the error", stream.Current().RawJSON())
		}
		var aerr *anthropic.Error
		if err := stream.Err(); !errors.As(err, &aerr) || aerr.Type() != "rate_limit_error" || !strings.Contains(aerr.Message, "insufficient_quota") {
			t.Fatalf("stream error %v, want an anthropic.Error of type rate_limit_error naming insufficient_quota", err)
		}
	})
}
