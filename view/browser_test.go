package view_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/view"
)

// The browser tests drive Debian's chromium, headless, through chromedp:
// the pages are checked as a person sees them, scripts run.

var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
)

// browserPath finds the browser: chromium as Debian ships it.
func browserPath() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH: the viewer's browser tests need it (apt-get install chromium; scripts/test-deps, which make test runs first, installs it)")
}

// tab opens a new tab of the package's headless browser, closed when the
// test ends.
func tab(t *testing.T) context.Context {
	t.Helper()
	browserOnce.Do(func() {
		path, err := browserPath()
		if err != nil {
			browserErr = err
			return
		}
		dir, err := os.MkdirTemp("", "factline-view-chromium-")
		if err != nil {
			browserErr = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 1000))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		// The browser lives as long as the context of its first run: the
		// package's, not a test's.
		if browserErr = chromedp.Do(bctx); browserErr != nil {
			cancelBrowser()
			cancelAlloc()
			return
		}
		browserCtx = bctx
		demoCleanup = append(demoCleanup, func() {
			cancelBrowser()
			cancelAlloc()
			for range 50 { // chromium's children may still write there a moment
				if os.RemoveAll(dir) == nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	})
	if browserErr != nil {
		t.Fatalf("start chromium: %v", browserErr)
	}
	ctx, cancel := chromedp.NewContext(browserCtx)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelT(); cancel() })
	return ctx
}

// do runs browser steps and fails the test naming what failed.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// The suites page shows the demo suite complete, with every one of its
// 48 planned attempts ended.
func TestBrowserTheSuitesPageShowsTheDemoComplete(t *testing.T) {
	ctx := testCtx(t)
	_, h := serveCaughtUp(t, ctx, demo(t))
	b := tab(t)
	do(t, b, "open the suites page", chromedp.Navigate(h.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-suite="demo"]`)))
	row := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll('tr[data-suite="demo"] td[data-field]')].map(td => [td.dataset.field, td.textContent.trim()]))`)
	if row["state"] != "complete · reported" || row["planned"] != "48" || row["ended"] != "48" || row["running"] != "0" {
		t.Fatalf("the demo's row: %v", row)
	}
	if loc := eval[string](t, b, `location.pathname`); loc != "/suites" {
		t.Fatalf("/ led to %s", loc)
	}
}

// The run page of a case the stall handler stopped (stuck-loop under
// stall-on) shows the stall stop, its cause, and the stop decision it led
// to with its unmet requirements.
func TestBrowserTheRunPageOfAStalledCaseShowsTheStallStop(t *testing.T) {
	ctx := testCtx(t)
	_, h := serveCaughtUp(t, ctx, demo(t))
	b := tab(t)
	do(t, b, "open the stalled run", chromedp.Navigate(h.URL+"/suites/demo/runs/stuck-loop-stall-on-t1"), chromedp.WaitVisible(chromedp.CSS(`#end`)))
	type stall struct {
		Turn, Action, Cause, Stop, Status, Unmet, End string
	}
	got := eval[stall](t, b, `(() => {
		const s = [...document.querySelectorAll('.stall')].find(e => e.querySelector('[data-field="stall-action"]').textContent === 'stop');
		if (!s) return {};
		const turn = s.closest('section.turn');
		const stop = turn.querySelector('.stop');
		return {Turn: turn.id, Action: 'stop', Cause: s.querySelector('[data-field="stall-cause"]').textContent,
			Stop: stop ? stop.querySelector('[data-field="stop-result"]').textContent : '',
			Status: stop && stop.querySelector('[data-field="stop-status"]') ? stop.querySelector('[data-field="stop-status"]').textContent : '',
			Unmet: stop ? stop.textContent : '', End: document.querySelector('#end h2').textContent};
	})()`)
	if got.Turn == "" || got.Cause == "" {
		t.Fatalf("no stall stop with its cause on the page: %+v", got)
	}
	if got.Stop != "finish" || got.Status != "incomplete" || !strings.Contains(got.Unmet, "unmet requirements") {
		t.Fatalf("the stall stop's turn does not show the stop decision with its unmet requirements: %+v", got)
	}
	if !strings.Contains(got.End, "incomplete") {
		t.Fatalf("the run's end: %q", got.End)
	}
	// A stable link opens the turn.
	do(t, b, "follow the turn's link", chromedp.Navigate(h.URL+"/suites/demo/runs/stuck-loop-stall-on-t1#"+got.Turn), chromedp.WaitVisible(chromedp.CSS("#"+got.Turn)))
	if target := eval[string](t, b, `document.querySelector(':target') ? document.querySelector(':target').id : ''`); target != got.Turn {
		t.Fatalf("the link #%s targets %q", got.Turn, target)
	}
}

// The suite page's numbers are the report's: each cell of its treatment
// table carries the JSON value 'factline report --json' prints for that
// field, and shows it.
func TestBrowserTheSuitePagesNumbersAreTheReport(t *testing.T) {
	ctx := testCtx(t)
	bus := demo(t)
	_, h := serveCaughtUp(t, ctx, bus)
	r, err := meter.Report(ctx, bus, "demo")
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := measure.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var report struct {
		Complete   bool                         `json:"complete"`
		Treatments []map[string]json.RawMessage `json:"treatments"`
	}
	if err := json.Unmarshal(js.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	b := tab(t)
	do(t, b, "open the suite page", chromedp.Navigate(h.URL+"/suites/demo"), chromedp.WaitVisible(chromedp.CSS(`#report`)))
	page := eval[map[string][]reportCell](t, b, `Object.fromEntries([...document.querySelectorAll('#report tr[data-treatment]')].map(tr =>
		[tr.dataset.treatment, [...tr.querySelectorAll('td[data-field]')].map(td => ({Field: td.dataset.field, Value: td.dataset.value, Text: td.textContent}))]))`)
	if len(page) != len(report.Treatments) || len(report.Treatments) != 2 {
		t.Fatalf("the page shows %d treatments, the report has %d", len(page), len(report.Treatments))
	}
	checked := 0
	for _, tr := range report.Treatments {
		var name string
		_ = json.Unmarshal(tr["treatment"], &name)
		cells := page[name]
		if len(cells) == 0 {
			t.Fatalf("no row for treatment %s", name)
		}
		for _, c := range cells {
			want := lookup(t, tr, c.Field)
			if c.Value != want {
				t.Errorf("%s %s: the page says %s, the report %s", name, c.Field, c.Value, want)
			}
			if n := strings.TrimSpace(c.Text); isCount(c.Field) && n != want {
				t.Errorf("%s %s shows %q for %s", name, c.Field, n, want)
			}
			checked++
		}
		for _, field := range []string{"planned", "passed", "failed", "graded", "pass_rate", "wilson", "usage.tokens"} {
			if !hasField(cells, field) {
				t.Errorf("%s: the page has no %s", name, field)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d cells checked", checked)
	}
	state := eval[string](t, b, `document.querySelector('#suite-state [data-field="complete"]').dataset.value`)
	if state != fmt.Sprint(report.Complete) {
		t.Fatalf("complete: page %s, report %t", state, report.Complete)
	}
}

// reportCell is a cell of the suite page's report table: the field, the
// JSON value it carries and the text it shows.
type reportCell struct{ Field, Value, Text string }

func hasField(cells []reportCell, field string) bool {
	for _, c := range cells {
		if c.Field == field {
			return true
		}
	}
	return false
}

// isCount says whether a field is shown as its plain number.
func isCount(field string) bool {
	return !strings.Contains(field, ".") && field != "pass_rate" && field != "wilson" && field != "clustered_se"
}

// lookup returns the compact JSON of a report field: "usage.tokens" is
// the tokens of usage, "pass_at_k.2" the value of pass@2.
func lookup(t *testing.T, tr map[string]json.RawMessage, field string) string {
	t.Helper()
	head, rest, nested := strings.Cut(field, ".")
	raw, ok := tr[head]
	if !ok {
		t.Fatalf("the report has no field %s", head)
	}
	if nested && head == "pass_at_k" {
		var ks []struct {
			K     int             `json:"k"`
			Value json.RawMessage `json:"value"`
		}
		_ = json.Unmarshal(raw, &ks)
		for _, k := range ks {
			if fmt.Sprint(k.K) == rest {
				return compactJSON(t, k.Value)
			}
		}
		return "null"
	}
	if nested {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return lookup(t, m, rest)
	}
	return compactJSON(t, raw)
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// shot takes a PNG of the whole page and checks it is one.
func shot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() < 800 || r.Dy() < 300 {
		t.Fatalf("the screenshot is %v", r)
	}
	return b
}

// cropTop keeps the top of a page's screenshot, at most height pixels: what
// a reader sees first, at a size a README can carry.
func cropTop(t *testing.T, full []byte, height int) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(full))
	if err != nil {
		t.Fatal(err)
	}
	r := img.Bounds()
	r.Max.Y = min(r.Max.Y, r.Min.Y+height)
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return full
	}
	var out bytes.Buffer
	if err := png.Encode(&out, sub.SubImage(r)); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// The three main pages render in the browser to a screenshot; with
// FACTLINE_VIEW_SHOTS set to a directory (make view-shots: docs/), the
// screenshots are written there for the README.
func TestBrowserScreenshotsOfTheThreeMainPages(t *testing.T) {
	ctx := testCtx(t)
	_, h := serveCaughtUp(t, ctx, demo(t))
	b := tab(t)
	out := os.Getenv("FACTLINE_VIEW_SHOTS")
	for _, p := range []struct{ name, path, ready string }{
		{"viewer-suites.png", "/suites", `tr[data-suite="demo"]`},
		{"viewer-suite.png", "/suites/demo", `#grid`},
		{"viewer-run.png", "/suites/demo/runs/stuck-loop-stall-on-t1", `#end`},
	} {
		do(t, b, "open "+p.path, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(h.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
		full := shot(t, b)
		if out != "" {
			top := cropTop(t, full, 1100)
			if err := os.WriteFile(filepath.Join(out, p.name), top, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s (%d bytes)", filepath.Join(out, p.name), len(top))
		}
	}
}

// slowSuite writes a suite of one run whose first model call takes a
// while: the demo's read-only case under a scripted model that answers
// its first turn after delay.
func slowSuite(t *testing.T, delay string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"suite.yaml":           "name: live\ncases:\n  - {path: cases/read-only/case.yaml}\ntreatments:\n  - {path: treatments/slow.yaml}\ntrials: 1\n",
		"treatments/slow.yaml": "id: slow\nmodel: {provider: scripted, scripts: ../scripts}\n",
		"scripts/read-only.yaml": "turns:\n  - calls: [{id: read, name: read_file, args: {path: NOTES.md}}]\n    usage: {input_tokens: 500, output_tokens: 20, cost: 1}\n    delay: " + delay + "\n" +
			"  - text: Release 2.4 uses port 9090 by default.\n    usage: {input_tokens: 600, output_tokens: 15, cost: 1}\n",
	}
	for _, src := range []string{"cases/read-only/case.yaml", "cases/read-only/fixture/NOTES.md"} {
		b, err := os.ReadFile(filepath.Join("../examples/demo", src))
		if err != nil {
			t.Fatal(err)
		}
		files[src] = string(b)
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// A steer sent while a run's model call is slow appears on the run page
// that is open, without a reload: the page follows the run's facts.
func TestBrowserASteerAppearsOnTheOpenRunPageWithoutReload(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	work := t.TempDir()
	done := make(chan error, 1)
	go func() { done <- runSuite(ctx, b, slowSuite(t, "4s"), work) }()
	const run = "read-only-slow-t1"
	// The page is opened once the run is in the log (until then it is a
	// 404 page, which stays one).
	if err := fleettest.Await(ctx, b, "live", run, func(l bus.RunLog) bool { return len(l.Records) > 0 }); err != nil {
		t.Fatal(err)
	}
	s, h := serve(t, view.Config{Bus: b})
	if err := s.WaitThrough(ctx, lastSeq(t, ctx, b)); err != nil {
		t.Fatal(err)
	}
	tb := tab(t)
	do(t, tb, "open the run page", chromedp.Navigate(h.URL+"/suites/live/runs/"+run), chromedp.WaitVisible(chromedp.CSS(`#handoff`)))
	// A reload would lose this mark.
	_ = eval[bool](t, tb, `window.notReloaded = true`)
	do(t, tb, "see turn 1 start live", chromedp.WaitVisible(chromedp.CSS(`#turn-1`)))
	const instruction = "Also name the file you read the port in."
	if err := b.Controls().Send(ctx, "live", run, events.Control{ID: "steer-view", Signal: events.SignalSteer, Instruction: instruction}); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(tb, chromedp.Poll[string](`(() => {
		const c = [...document.querySelectorAll('.control[data-signal="steer"]')].find(e => e.textContent.includes(`+strconv.Quote(instruction)+`));
		return c ? c.textContent : false;
	})()`, chromedp.WithPollingTimeout(90*time.Second)))
	if err != nil {
		t.Fatalf("the steer never appeared on the open page: %v", err)
	}
	if !strings.Contains(got, "steer-view") {
		t.Fatalf("the steer shown: %q", got)
	}
	if !eval[bool](t, tb, `window.notReloaded === true`) {
		t.Fatal("the page was reloaded")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The run's later facts arrive too: the page ends as the run did.
	do(t, tb, "see the run end live", chromedp.WaitVisible(chromedp.CSS(`#end`)))
}
