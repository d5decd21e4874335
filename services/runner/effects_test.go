package runner_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// slowSink applies every POST at once and answers the first POST of each
// operation only after hold has passed (or the sink is closed): the answer
// is lost to a caller whose timeout is shorter. It deduplicates by
// Idempotency-Key when dedupe is set, and answers status lookups
// (GET /status/<operation>: 200 applied, 404 not) when asked to.
type slowSink struct {
	mu      sync.Mutex
	effects map[string]int
	seen    map[string]bool
	dedupe  bool
	hold    time.Duration
	release chan struct{}
}

func newSlowSink(dedupe bool, hold time.Duration) *slowSink {
	return &slowSink{effects: map[string]int{}, seen: map[string]bool{}, dedupe: dedupe, hold: hold, release: make(chan struct{})}
}

func (s *slowSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		op := strings.TrimPrefix(r.URL.Path, "/status/")
		s.mu.Lock()
		n := s.effects[op]
		s.mu.Unlock()
		if n > 0 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	if !(s.dedupe && s.effects[key] > 0) {
		s.effects[key]++
	}
	first := !s.seen[key]
	s.seen[key] = true
	s.mu.Unlock()
	if first {
		select {
		case <-time.After(s.hold):
		case <-s.release:
		}
	}
	fmt.Fprintf(w, `{"order":%q}`, key)
}

func (s *slowSink) counts() (ops, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.effects {
		ops++
		total += n
	}
	return ops, total
}

// A call whose answer is lost after the request reached the sink (the sink
// applied the order and answered after the call's timeout) has an unknown
// outcome. It is never settled as not applied or retryable: before the
// model gets another turn the runner reconciles it under the same
// operation ID (the status lookup, a resend to a deduplicating sink, a
// person's finding) or stops the run for a person, and the model never
// gets the chance to place the order a second time blindly.
func TestTimedOutEffectIsReconciledNeverRepeated(t *testing.T) {
	t.Parallel()
	e := startTuned(t, func(*bus.Bus) []kit.Option { return []kit.Option{runner.WithApprovalTimeout(2 * time.Second)} }, nil)
	for _, c := range []struct {
		name           string
		dedupe, status bool
		resolve        string
		want           events.RunStatus
		outcome        string // what the first call settles as
		effects        int    // effects at the sink when the run ends
	}{
		// The lookup shows the order: settled applied, and the model, told
		// so, places its second order knowingly.
		{"status-lookup", false, true, "", events.RunDone, events.OutcomeApplied, 2},
		// Resent under the same key: the sink keeps one, and answers.
		{"dedupe", true, false, "", events.RunDone, events.OutcomeApplied, 2},
		// A person finds it applied.
		{"person", false, false, events.OutcomeApplied, events.RunDone, events.OutcomeApplied, 2},
		// Nothing can tell: the run stops for a person after one effect.
		{"no-way-to-know", false, false, "", events.RunNeedsHuman, events.OutcomeUnknown, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			sk := newSlowSink(c.dedupe, time.Minute)
			hs := httptest.NewServer(sk)
			defer hs.Close()
			defer close(sk.release)
			kase := fixtureCase(t, "{steps: 6}")
			kase.HTTP = &cases.HTTPPolicy{Allow: []string{hs.URL + "/"}, Dedupe: c.dedupe, Timeout: cases.Duration(300 * time.Millisecond)}
			if c.status {
				kase.HTTP.Status = hs.URL + "/status/{operation}"
			}
			kase.Tools = append(kase.Tools, "http_call")
			script := fmt.Sprintf(`turns:
  - calls:
      - {id: order, name: http_call, args: {url: "%[1]s/orders", body: '{"sku": 7}'}}
  - calls:
      - {id: order, name: http_call, args: {url: "%[1]s/orders", body: '{"sku": 7}'}}
  - calls:
      - {id: done, name: task_complete, args: {status: done, evidence: [t2/order]}}
`, hs.URL)
			run := "timeout-" + c.name
			if c.resolve != "" {
				// Signals wait in the CONTROL stream until the runner needs them.
				for _, op := range []string{run + "/t1/order", run + "/t2/order"} {
					must(t, e.b.Controls().Send(e.ctx, "suite", run, events.Control{Signal: events.SignalResolve,
						Operation: op, Outcome: c.resolve, Reason: "the order is in the sink"}))
				}
			}
			log, end := e.run(kase, script, run)
			if end.Status != c.want {
				t.Fatalf("ended %s/%q, want %s", end.Status, end.Reason, c.want)
			}
			first, ok := dispatches(log)["t1/order"]
			if !ok {
				t.Fatal("the timed-out call was never settled")
			}
			if first.Dispatch.Outcome != c.outcome {
				t.Fatalf("the timed-out call settled with outcome %q (%+v), want %q", first.Dispatch.Outcome, first.Error, c.outcome)
			}
			if first.Error != nil && first.Error.Retryable {
				t.Fatalf("an unknown outcome was offered to the model as retryable: %+v", first.Error)
			}
			if _, total := sk.counts(); total != c.effects {
				t.Fatalf("the sink applied %d orders, want %d", total, c.effects)
			}
			if c.want == events.RunNeedsHuman {
				if !strings.Contains(end.Reason, run+"/t1/order") {
					t.Fatalf("the reason does not name the operation: %q", end.Reason)
				}
				if n := len(kinds(log, events.KindTurnStarted)); n != 1 {
					t.Fatalf("the model got %d turns, want 1: it must not act on an unknown outcome", n)
				}
				return
			}
			if !strings.Contains(first.Output, "took effect") {
				t.Fatalf("the model was not told the order took effect: %s", first.Output)
			}
		})
	}
}

// While an operation of a run is unknown, nothing else of the reply runs:
// the call after it waits for the reconciliation.
func TestNothingRunsWhileAnEffectIsUnknown(t *testing.T) {
	t.Parallel()
	e := startTuned(t, func(*bus.Bus) []kit.Option { return []kit.Option{runner.WithApprovalTimeout(time.Second)} }, nil)
	sk := newSlowSink(false, time.Minute)
	hs := httptest.NewServer(sk)
	defer hs.Close()
	defer close(sk.release)
	kase := fixtureCase(t, "{steps: 6}")
	kase.HTTP = &cases.HTTPPolicy{Allow: []string{hs.URL + "/"}, Timeout: cases.Duration(300 * time.Millisecond)}
	kase.Tools = append(kase.Tools, "http_call")
	script := fmt.Sprintf(`turns:
  - calls:
      - {id: a, name: http_call, args: {url: "%[1]s/orders", body: '{"sku": 1}'}}
      - {id: b, name: http_call, args: {url: "%[1]s/orders", body: '{"sku": 2}'}}
`, hs.URL)
	log, end := e.run(kase, script, "one-unknown")
	if end.Status != events.RunNeedsHuman {
		t.Fatalf("ended %s/%q, want needs_human", end.Status, end.Reason)
	}
	if ops, _ := sk.counts(); ops != 1 {
		t.Fatalf("the sink saw %d operations, want only the first", ops)
	}
	ds := dispatches(log)
	if d := ds["t1/b"]; d.Dispatch.Disposition != events.DispositionNotRun {
		t.Fatalf("the call after the unknown one settled %+v, want not_run", d.Dispatch)
	}
	for _, f := range log.Facts() {
		if in, ok := f.Body.(events.DispatchIntended); ok && in.CallID == "b" {
			t.Fatal("the second effect was intended while the first was unknown")
		}
	}
	assertNoTurnAfter(t, log)
}

// assertNoTurnAfter checks that an ended run completed no turn whose
// dispatches are not all settled, and appended nothing after run.ended.
func assertNoTurnAfter(t *testing.T, log bus.RunLog) {
	t.Helper()
	ended := false
	for _, f := range log.Facts() {
		if ended && !strings.HasPrefix(string(f.Kind()), "grade.") {
			t.Fatalf("%s after run.ended", f.Kind())
		}
		if f.Kind() == events.KindRunEnded {
			ended = true
		}
	}
}

// lateSink applies the first POST of each operation only after late has
// passed, long after its caller gave up waiting for the answer, as a slow
// sink behind a queue does; later POSTs it applies at once. It answers
// status lookups from what it has applied so far.
type lateSink struct {
	mu      sync.Mutex
	late    time.Duration
	posts   map[string]int
	applied map[string]int
}

func (s *lateSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		s.mu.Lock()
		n := s.applied[strings.TrimPrefix(r.URL.Path, "/status/")]
		s.mu.Unlock()
		if n > 0 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.posts[key]++
	first := s.posts[key] == 1
	s.mu.Unlock()
	if first {
		time.Sleep(s.late) // whether or not the caller still waits
	}
	s.mu.Lock()
	s.applied[key]++
	s.mu.Unlock()
	fmt.Fprintf(w, `{"order":%q}`, key)
}

// A status lookup that answers "not found" right after a send timed out
// is no proof the send never took effect: the sink may still be applying
// it. The runner waits out the settle window after a lost answer before it
// takes a "not found" as "not applied" and sends again; here the sink
// applies the first send within that window, and the lookup after it
// finds it.
func TestTimedOutEffectIsNotResentOnANotFoundWithinTheSettleWindow(t *testing.T) {
	t.Parallel()
	e := start(t)
	sk := &lateSink{late: time.Second, posts: map[string]int{}, applied: map[string]int{}}
	hs := httptest.NewServer(sk)
	defer hs.Close()
	kase := fixtureCase(t, "{steps: 6}")
	kase.HTTP = &cases.HTTPPolicy{Allow: []string{hs.URL + "/"}, Status: hs.URL + "/status/{operation}",
		Timeout: cases.Duration(300 * time.Millisecond)}
	kase.Tools = append(kase.Tools, "http_call")
	script := fmt.Sprintf(`turns:
  - calls:
      - {id: order, name: http_call, args: {url: "%s/orders", body: '{"sku": 7}'}}
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/order]}}
`, hs.URL)
	log, end := e.run(kase, script, "late-sink")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q, want done", end.Status, end.Reason)
	}
	sk.mu.Lock()
	posts, applied := sk.posts["late-sink/t1/order"], sk.applied["late-sink/t1/order"]
	sk.mu.Unlock()
	if posts != 1 || applied != 1 {
		t.Fatalf("the sink got %d POSTs and applied %d, want the one send, applied once", posts, applied)
	}
	if d := dispatches(log)["t1/order"]; d.Dispatch.Outcome != events.OutcomeApplied {
		t.Fatalf("the call settled %q (%s), want applied", d.Dispatch.Outcome, d.Output)
	}
}
