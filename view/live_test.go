package view_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/view"
	"github.com/factline/factline/view/pages"
)

// eventStream is an open Server-Sent Events response.
type eventStream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

// openEvents opens the viewer's event stream at url, sending lastID as
// Last-Event-ID when it is not empty, as a reconnecting browser does.
func openEvents(t *testing.T, ctx context.Context, url, lastID string) *eventStream {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &eventStream{resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next returns the ID and data of the next event (comments and the retry
// field are skipped). The request's context bounds the wait.
func (e *eventStream) next(t *testing.T) (uint64, string) {
	t.Helper()
	var id uint64
	var data string
	for e.sc.Scan() {
		line := e.sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			n, err := strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				t.Fatalf("event id %q", line)
			}
			id = n
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && id != 0:
			return id, data
		}
	}
	t.Fatalf("the event stream ended: %v", e.sc.Err())
	return 0, ""
}

// appendClaim appends a run.claimed fact at position pos of suite/run and
// returns its sequence, retrying while the server is away.
func appendClaim(t *testing.T, ctx context.Context, b *bus.Bus, suite, run string, pos, after uint64) uint64 {
	t.Helper()
	f := bustest.Claim(t, suite, run, pos)
	for {
		recs, err := b.Append(ctx, bus.ExpectLast(after), bus.Pending{Fact: f})
		if err == nil {
			return recs[0].Seq
		}
		if ctx.Err() != nil {
			t.Fatalf("append: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The viewer survives the NATS server restarting: its feed reads again
// from where it was, so a fact committed after the restart reaches the
// pages, once; an event stream open through the restart delivers it; and
// a browser reconnecting with Last-Event-ID gets what came after that
// event and nothing before.
func TestTheViewerSurvivesANATSServerRestart(t *testing.T) {
	ctx := testCtx(t)
	r := bustest.StartRestartable(t)
	b := r.Dial(ctx)
	s, h := serve(t, view.Config{Bus: b, Retry: 50 * time.Millisecond})
	seq1 := appendClaim(t, ctx, b, "s", "r1", 1, 0)
	if err := s.WaitThrough(ctx, seq1); err != nil {
		t.Fatal(err)
	}
	through := openEvents(t, ctx, h.URL+"/events?suite=s&run=r1&since=0", "")
	if id, _ := through.next(t); id != seq1 {
		t.Fatalf("first event %d, want %d", id, seq1)
	}

	r.Server.Shutdown()
	// A page that opens its stream while the server is away gets it too.
	during := openEvents(t, ctx, h.URL+"/events?suite=s&run=r1&since="+strconv.FormatUint(seq1, 10), "")
	testutil.Until(ctx, t, "the viewer's bus to notice", func() bool { return !b.Conn().IsConnected() })
	r.Start()
	seq2 := appendClaim(t, ctx, b, "s", "r1", 2, seq1)
	if err := s.WaitThrough(ctx, seq2); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	id, data := through.next(t)
	if id != seq2 {
		t.Fatalf("the stream open through the restart sent %d, want %d", id, seq2)
	}
	var ev struct{ Kind, Run string }
	if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Kind != "run.claimed" || ev.Run != "r1" {
		t.Fatalf("event data %s (%v)", data, err)
	}

	if id, _ := during.next(t); id != seq2 {
		t.Fatalf("the stream opened during the outage sent %d, want %d", id, seq2)
	}

	_, body := get(t, h.URL+"/api/suites/s/runs/r1")
	var p pages.RunPage
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Log) != 2 || p.Log[1].Seq != seq2 || p.Handoff.Facts != 2 || p.Handoff.Lease != 2 {
		t.Fatalf("the run after the restart: %d facts in its log, handoff %+v", len(p.Log), p.Handoff)
	}

	seq3 := appendClaim(t, ctx, b, "s", "r1", 3, seq2)
	again := openEvents(t, ctx, h.URL+"/events?suite=s&run=r1&since=0", strconv.FormatUint(seq2, 10))
	if id, _ := again.next(t); id != seq3 {
		t.Fatalf("a stream resumed after %d sent %d first, want %d", seq2, id, seq3)
	}
}

// An event stream names a run within its suite, and its start is a
// sequence: a bad request says what is wrong.
func TestABadEventStreamRequestSaysWhatIsWrong(t *testing.T) {
	_, h := serve(t, view.Config{Bus: demo(t)})
	for url, want := range map[string]string{
		"/events?run=r1":           "give suite too",
		"/events?suite=a.b":        "suite",
		"/events?suite=s&since=x7": `since "x7" is not a stream sequence`,
	} {
		status, body := get(t, h.URL+url)
		if status != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 400 saying %q", url, status, body, want)
		}
	}
}

// A viewer started on an empty store says so, and how to run the demo
// into it.
func TestAViewerOfAnEmptyStoreSaysHowToRunTheDemo(t *testing.T) {
	b, _ := bustest.Start(t)
	_, h := serve(t, view.Config{Bus: b})
	status, body := get(t, h.URL+"/suites")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	for _, want := range []string{"The log is empty", "factline run examples/demo/suite.yaml --store DIR", "factline view --store DIR"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the empty store's page does not say %q:\n%s", want, body)
		}
	}
	// The shape it gives is the demo's own, read from its suite file.
	data, err := os.ReadFile("../examples/demo/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var demoSuite struct {
		Cases      []any `yaml:"cases"`
		Treatments []any `yaml:"treatments"`
		Trials     int   `yaml:"trials"`
	}
	if err := yaml.Unmarshal(data, &demoSuite); err != nil {
		t.Fatal(err)
	}
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
	word := func(n int) string {
		if n < len(words) {
			return words[n]
		}
		return fmt.Sprint(n)
	}
	shape := fmt.Sprintf("%s cases, %s treatments, %s trials", word(len(demoSuite.Cases)), word(len(demoSuite.Treatments)), word(demoSuite.Trials))
	if !strings.Contains(body, shape) {
		t.Errorf("the empty store's page does not give the demo's shape %q:\n%s", shape, body)
	}
}

// An event stream's heartbeat ends with its stream: closed by the browser
// at any instant, even between two beats a millisecond apart, the stream
// writes nothing after its handler has returned (the race detector sees
// such a write).
func TestAClosedEventStreamWritesNothingAfterItsHandler(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	_, h := serve(t, view.Config{Bus: b, Heartbeat: time.Millisecond})
	for i := range 40 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/events?since=0", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %s", i, res.Status)
		}
		buf := make([]byte, 64)
		if _, err := res.Body.Read(buf); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		time.Sleep(time.Duration(i%5) * time.Millisecond)
		res.Body.Close()
	}
}
