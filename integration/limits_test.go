package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models/limit"
)

// throttlingProvider is an OpenAI-compatible Chat Completions endpoint on
// loopback that counts the requests in flight at once and throttles every
// fourth request with a 429 and a Retry-After.
type throttlingProvider struct {
	mu                        sync.Mutex
	inFlight, maxInFlight     int
	requests, throttled, okay int
}

func (p *throttlingProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.inFlight++
	p.maxInFlight = max(p.maxInFlight, p.inFlight)
	p.requests++
	throttle := p.requests%4 == 0
	if throttle {
		p.throttled++
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
	}()
	if throttle {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"message":"rate limited","type":"rate_limit"}}`))
		return
	}
	// Long enough that the runners' calls overlap.
	select {
	case <-time.After(100 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	p.mu.Lock()
	p.okay++
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":0,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"Port 8080."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23}}`,
		p.requests, req.Model)
}

func (p *throttlingProvider) counts() (maxInFlight, requests, throttled, okay int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxInFlight, p.requests, p.throttled, p.okay
}

// limitsTrials is how many runs the suite below makes: more than the
// three runner processes' six workers, so that every worker calls.
const limitsTrials = 9

// writeLimitedSuite writes a one-case suite whose treatment calls the
// provider at url with at most two calls in flight across the fleet.
func writeLimitedSuite(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"suite.yaml": fmt.Sprintf(`name: limits
cases:
  - {path: cases/answer/case.yaml}
treatments:
  - {path: treatments/limited.yaml}
trials: %d
`, limitsTrials),
		"cases/answer/case.yaml": `id: answer
instruction: Which port does the service use? Answer in one sentence.
budget: {steps: 2}
tools: [task_complete]
`,
		"treatments/limited.yaml": fmt.Sprintf(`id: limited
model: {provider: openai, name: fake-model, base_url: "%s/v1", limits: {max_concurrent: 2}}
`, url),
	})
	return filepath.Join(dir, "suite.yaml")
}

// Three runner processes share a limit of two concurrent calls to a
// provider that throttles: the provider never sees more than two requests
// at once, every run completes, and the throttles lowered the limit the
// fleet shares (its state is in the LIMITS bucket).
func TestThreeRunnerProcessesShareAModelLimit(t *testing.T) {
	t.Parallel()
	// The factline binary is built (once) before any context of the
	// test starts: the build is no part of what the context bounds.
	factlineBinary(t)
	provider := &throttlingProvider{}
	api := httptest.NewServer(provider)
	defer api.Close()
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	startFleetIn(t, ctx, fleetSpec{copies: 1, ackWait: 30 * time.Second, connect: connector(t, srv, bus.Config{}), noRunner: true})
	for range 3 {
		startProc(t, "serve", "--services", "runner", "--nats", srv.ClientURL(), "--instances", "2", "--work-dir", t.TempDir())
	}
	b := connector(t, srv, bus.Config{})()
	submitSuite(t, ctx, b, writeLimitedSuite(t, api.URL))
	got := awaitReported(t, ctx, b, "limits", func() string {
		m, r, th, ok := provider.counts()
		return fmt.Sprintf("provider: max in flight %d, %d requests, %d throttled, %d answered", m, r, th, ok)
	})

	maxInFlight, requests, throttled, okay := provider.counts()
	t.Logf("provider: max in flight %d, %d requests, %d throttled, %d answered", maxInFlight, requests, throttled, okay)
	if maxInFlight > 2 {
		t.Fatalf("the provider saw %d requests in flight at once; the fleet's limit is 2", maxInFlight)
	}
	ended, runners, waited := 0, map[string]bool{}, 0
	for _, f := range got.facts {
		switch b := f.Body.(type) {
		case events.RunEnded:
			ended++
		case events.ModelReplied:
			runners[f.Producer.Instance] = true
			if b.QueueWaitMs > 0 {
				waited++
			}
		}
	}
	if ended != limitsTrials {
		t.Fatalf("%d runs ended, want %d", ended, limitsTrials)
	}
	if okay < limitsTrials || throttled == 0 {
		t.Fatalf("%d answers and %d throttles: the provider was not exercised as the test needs", okay, throttled)
	}
	t.Logf("%d replies waited for a slot, from %d runner instances", waited, len(runners))
	kv, err := b.JetStream().KeyValue(ctx, bus.LimitsBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, limit.Key("openai", api.URL+"/v1", "fake-model")+".state")
	if err != nil {
		t.Fatalf("no adaptive state for the limit after %d throttles: %v", throttled, err)
	}
	var st limit.State
	if err := json.Unmarshal(e.Value(), &st); err != nil || st.PausedUntil.IsZero() {
		t.Fatalf("adaptive state %s (%v): want the pause a throttle sets", e.Value(), err)
	}
}
