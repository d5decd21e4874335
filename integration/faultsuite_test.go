package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/ops/audit"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

// The fault suite is the demo suite plus one case with an external effect:
// "notify" POSTs a note to a webhook sink that applies every POST it
// receives (it does not deduplicate) and answers status lookups, so a
// runner that dies with the POST in flight must look the operation up
// instead of sending it again. Every fault test runs it and compares what
// it got with a fault-free run.

// effectSink is the webhook of the notify case: shared by every test in
// the package (the URL is part of the case, so it must not change between
// the fault-free run and the faulty ones) and reset by each.
type effectSink struct {
	mu      sync.Mutex
	applied map[string]int // operation ID → effects applied
	onPost  func(operation string)
	srv     *httptest.Server
}

var (
	sinkOnce   sync.Once
	sharedSink *effectSink
)

func theSink() *effectSink {
	sinkOnce.Do(func() {
		sharedSink = &effectSink{applied: map[string]int{}}
		sharedSink.srv = httptest.NewServer(sharedSink)
	})
	return sharedSink
}

func (s *effectSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		op := strings.TrimPrefix(r.URL.Path, "/status/")
		s.mu.Lock()
		n := s.applied[op]
		s.mu.Unlock()
		if n > 0 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	op := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.applied[op]++
	hook := s.onPost
	s.mu.Unlock()
	if hook != nil {
		hook(op)
	}
	fmt.Fprintf(w, `{"accepted":%q}`, op)
}

// reset forgets every effect and sets the hook called on each POST (after
// it was applied, before it is answered).
func (s *effectSink) reset(onPost func(operation string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied = map[string]int{}
	s.onPost = onPost
}

func (s *effectSink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.applied))
	for k, v := range s.applied {
		out[k] = v
	}
	return out
}

// writeFaultSuite copies the demo suite into a temporary directory, adds
// the notify case and its script, and sets the number of trials.
func writeFaultSuite(t testing.TB, trials int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "faultsuite")
	if err := os.CopyFS(dir, os.DirFS("../examples/demo")); err != nil {
		t.Fatal(err)
	}
	url := theSink().srv.URL
	files := map[string]string{
		"cases/notify/case.yaml": fmt.Sprintf(`id: notify
instruction: Post the release note to the team webhook, then call task_complete citing the post.
tools: [http_call, task_complete]
budget: {steps: 3, cost: 10}
http:
  allow: ["%s/notes"]
  status: "%s/status/{operation}"
  timeout: 1s
`, url, url),
		"scripts/notify.yaml": fmt.Sprintf(`turns:
  - calls:
      - {id: post, name: http_call, args: {url: "%s/notes", body: '{"note": "v1.2 shipped"}'}}
    usage: {input_tokens: 300, output_tokens: 20, cost: 1}
    reserve: 2
  - calls:
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/post]}}
    usage: {input_tokens: 350, output_tokens: 10, cost: 1}
    reserve: 2
`, url),
	}
	// The stall-on treatment also takes a fleet-wide model limit and looks
	// every call up in the response cache, so that every fault test breaks
	// those bus paths too. The cache only reads: a takeover answered from
	// an entry a dead runner wrote would be reported as a cache hit that
	// the fault-free run never had.
	files["treatments/stall-on.yaml"] = `id: stall-on
model: {provider: scripted, scripts: ../scripts, limits: {max_concurrent: 3, max_requests_per_minute: 100000}}
cache: {mode: read}
`
	writeTree(t, dir, files)
	suitePath := filepath.Join(dir, "suite.yaml")
	data, err := os.ReadFile(suitePath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "  - {path: cases/read-only/case.yaml}\n",
		"  - {path: cases/read-only/case.yaml}\n  - {path: cases/notify/case.yaml}\n", 1)
	text = strings.Replace(text, "trials: 3", fmt.Sprintf("trials: %d", trials), 1)
	if !strings.Contains(text, "cases/notify") || !strings.Contains(text, fmt.Sprintf("trials: %d", trials)) {
		t.Fatalf("the demo suite changed shape; update writeFaultSuite:\n%s", data)
	}
	if err := os.WriteFile(suitePath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return suitePath
}

// submitSuite publishes a suite file and submits it.
func submitSuite(t testing.TB, ctx context.Context, b *bus.Bus, path string) *suites.Published {
	t.Helper()
	p, err := fleettest.SubmitFile(ctx, b, path, "fault-test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// suiteOutcome is what a fault test compares with the fault-free run.
type suiteOutcome struct {
	report string              // the report without wall times
	kinds  map[events.Kind]int // facts by kind, see comparableKinds
	sink   map[string]int      // the sink's effects by operation
	facts  []events.Fact
	seqs   []uint64 // the stream sequence of each fact
	ended  int
	// blobs says, for each blob the facts name (events.BlobRefs),
	// whether the store holds it.
	blobs map[events.Digest]bool
}

// faultKinds are the kinds a fault may add to a correct log: a runner that
// takes a run over claims it again (with a higher fencing epoch), and a
// dispatch left unsettled by a dead runner is settled by its heir. Every
// other kind must appear exactly as often as without faults.
var faultKinds = map[events.Kind]bool{events.KindRunClaimed: true}

// awaitReported waits until the suite is reported, then reads what a fault
// test compares. It fails the test with where the suite stands when ctx
// ends first.
func awaitReported(t testing.TB, ctx context.Context, b *bus.Bus, suite string, progress func() string) suiteOutcome {
	t.Helper()
	var reported *events.SuiteReported
	for reported == nil {
		if log, err := b.LoadRun(ctx, suite, events.SuiteScope); err == nil {
			for _, f := range log.Facts() {
				if sr, ok := f.Body.(events.SuiteReported); ok {
					reported = &sr
				}
			}
		}
		if reported != nil {
			break
		}
		// Give up a little before ctx ends, while the in-process services
		// still run, so that their stacks show where they wait.
		if d, ok := ctx.Deadline(); ctx.Err() != nil || ok && time.Until(d) < 15*time.Second {
			rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r, err := meter.Report(rctx, b, suite)
			cancel()
			var sb strings.Builder
			if err != nil {
				fmt.Fprintf(&sb, "(no report: %v)\n", err)
			}
			_ = measure.WriteTable(&sb, r)
			extra := ""
			if progress != nil {
				extra = progress()
			}
			t.Fatalf("the suite was never reported; where it stands:\n%s%s\nservices in this process:\n%s", sb.String(), extra, serviceStacks())
		}
		time.Sleep(200 * time.Millisecond)
	}
	stored, err := b.Blobs().Get(ctx, reported.ReportDigest)
	if err != nil {
		t.Fatal(err)
	}
	r, err := meter.Report(ctx, b, suite)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := measure.EncodeJSON(r); string(again) != string(stored) {
		t.Fatal("the stored report differs from the one rebuilt from the log")
	}
	out := suiteOutcome{report: withoutWallTime(r), kinds: map[events.Kind]int{}, sink: theSink().counts()}
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite)}, func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			return fmt.Errorf("message %d: %w", raw.Seq, err)
		}
		out.facts = append(out.facts, f)
		out.seqs = append(out.seqs, raw.Seq)
		if !faultKinds[f.Kind()] {
			out.kinds[f.Kind()]++
		}
		if f.Kind() == events.KindRunEnded {
			out.ended++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out.blobs = map[events.Digest]bool{}
	for _, f := range out.facts {
		for _, ref := range events.BlobRefs(f) {
			if _, asked := out.blobs[ref.Digest]; asked {
				continue
			}
			_, err := b.Blobs().Stat(ctx, ref.Digest)
			if err != nil && !errors.Is(err, bus.ErrBlobNotFound) {
				t.Fatal(err)
			}
			out.blobs[ref.Digest] = err == nil
		}
	}
	return out
}

// checkOutcome is every fault test's verdict: the audit passes (with the
// sink's own record), every effect reached the sink exactly once, and the
// report and the fact counts by kind are those of the fault-free run.
func checkOutcome(t testing.TB, got, want suiteOutcome) {
	t.Helper()
	// A fault never leaves a fact naming a blob the store lacks: every
	// writer stores a blob before the fact that names it.
	opts := audit.Options{Finished: true, Sink: got.sink, Seqs: got.seqs}
	if got.blobs != nil {
		opts.Blobs = func(d events.Digest) bool { return got.blobs[d] }
	}
	if vs := audit.Check(got.facts, opts); len(vs) > 0 {
		runs := map[string]bool{}
		for _, v := range vs {
			t.Errorf("audit: %v", v)
			runs[v.Run] = true
		}
		logRuns(t, got, runs)
	}
	if len(got.sink) != len(want.sink) {
		t.Errorf("the sink saw %d operations, want %d", len(got.sink), len(want.sink))
	}
	for op, n := range got.sink {
		if n != 1 {
			t.Errorf("the sink applied %s %d times, want exactly once", op, n)
		}
	}
	if got.report != want.report {
		t.Errorf("the report differs from the fault-free one:\n  got %s\n want %s", got.report, want.report)
		logRuns(t, got, differingRuns(got.report, want.report))
	}
	var diffs []string
	for _, k := range unionKinds(got.kinds, want.kinds) {
		if got.kinds[k] != want.kinds[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %d, want %d", k, got.kinds[k], want.kinds[k]))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("fact counts by kind differ from the fault-free run:\n  %s", strings.Join(diffs, "\n  "))
	}
}

// logRuns logs every fact of the named runs, bodies abridged, so that a
// failure shows how a run came to differ.
func logRuns(t testing.TB, got suiteOutcome, runs map[string]bool) {
	t.Helper()
	for i, f := range got.facts {
		if !runs[f.Run] {
			continue
		}
		body := fmt.Sprintf("%+v", f.Body)
		if len(body) > 400 {
			body = body[:400] + "…"
		}
		t.Logf("%s seq %d pos %d %s by %s/%s: %s", f.Run, got.seqs[i], f.Position, f.Kind(), f.Producer.Service, f.Producer.Instance, body)
	}
}

// differingRuns names the runs whose lines in two JSON reports differ.
func differingRuns(got, want string) map[string]bool {
	lines := func(report string) map[string]string {
		parts := map[string][]string{}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if run, ok := v["run"].(string); ok {
					line, _ := json.Marshal(v)
					parts[run] = append(parts[run], string(line))
				}
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		var v any
		_ = json.Unmarshal([]byte(report), &v)
		walk(v)
		out := map[string]string{}
		for run, p := range parts {
			slices.Sort(p)
			out[run] = strings.Join(p, "\n")
		}
		return out
	}
	g, w := lines(got), lines(want)
	runs := map[string]bool{}
	for run, line := range g {
		if w[run] != line {
			runs[run] = true
		}
	}
	for run := range w {
		if _, ok := g[run]; !ok {
			runs[run] = true
		}
	}
	return runs
}

func unionKinds(a, b map[events.Kind]int) []events.Kind {
	seen := map[events.Kind]bool{}
	var out []events.Kind
	for _, m := range []map[events.Kind]int{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// serviceStacks returns the stacks of this process's goroutines that are
// inside factline code: where in-process services are when a test waits in
// vain.
func serviceStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "factline/factline/services/") || strings.Contains(g, "factline/factline/bus.") {
			out.WriteString(g)
			out.WriteString("\n\n")
		}
	}
	return out.String()
}
