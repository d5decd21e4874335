package runner_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// The status lookup does not follow a redirect: a status endpoint that
// answers 302 finds nothing, even when the place it points at would say
// "took effect". The lookup reaches only the URL the case wrote; what
// another host says about the operation settles nothing.
func TestStatusLookupDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	e := startTuned(t, func(*bus.Bus) []kit.Option { return []kit.Option{runner.WithApprovalTimeout(time.Second)} }, nil)
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusOK) // "it took effect"
	}))
	defer other.Close()
	sk := newSlowSink(false, time.Minute)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
			return
		}
		sk.ServeHTTP(w, r)
	}))
	defer hs.Close()
	defer close(sk.release)
	kase := fixtureCase(t, "{steps: 6}")
	kase.HTTP = &cases.HTTPPolicy{Allow: []string{hs.URL + "/"}, Status: hs.URL + "/status/{operation}",
		Timeout: cases.Duration(300 * time.Millisecond)}
	kase.Tools = append(kase.Tools, "http_call")
	script := fmt.Sprintf(`turns:
  - calls:
      - {id: order, name: http_call, args: {url: "%s/orders", body: '{"sku": 7}'}}
`, hs.URL)
	log, end := e.run(kase, script, "lookup-redirect")
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the status lookup followed the redirect: the other server got %d requests", n)
	}
	if end.Status != events.RunNeedsHuman {
		t.Fatalf("ended %s/%q, want needs_human: a redirected lookup tells nothing", end.Status, end.Reason)
	}
	first := dispatches(log)["t1/order"]
	if first.Dispatch.Outcome != events.OutcomeUnknown {
		t.Fatalf("the call settled %q, want unknown", first.Dispatch.Outcome)
	}
}
