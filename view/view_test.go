package view_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/projections/replay"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/view"
	"github.com/factline/factline/view/pages"
)

// export writes the whole log of b to a file and returns its path.
func export(t *testing.T, b *bus.Bus) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log.flx")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Export(testCtx(t), w, bus.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// rebuild folds an export file into a fresh page model, as an analyst
// would, with no viewer involved.
func rebuild(t *testing.T, path string) *pages.Model {
	t.Helper()
	m := pages.New()
	_, err := replay.File(path).Each(testCtx(t), func(raw bus.Raw) error {
		f, err := raw.Fact()
		if err != nil {
			m.Skip(raw.Seq, raw.Subject, err)
			return nil
		}
		m.Apply(raw.Seq, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// Every page is a projection of the log: the data a live viewer served for
// the suites page, the demo suite's page and every run's page equals, byte
// for byte, the data rebuilt from an export of the same log, and what a
// viewer of the export file serves.
func TestEveryPageIsRebuiltFromAnExportAsTheLiveViewerServedIt(t *testing.T) {
	ctx := testCtx(t)
	b := demo(t)
	_, live := serveCaughtUp(t, ctx, b)
	path := export(t, b)
	m := rebuild(t, path)
	fs, fromFile := serve(t, view.Config{File: path})
	for !fs.Loaded() {
		if err := fs.WaitThrough(ctx, m.Through()); err != nil {
			t.Fatal(err)
		}
	}

	check := func(url string, want any) {
		t.Helper()
		for _, srv := range []string{live.URL, fromFile.URL} {
			status, got := get(t, srv+url)
			if status != http.StatusOK {
				t.Fatalf("%s%s: %d %s", srv, url, status, got)
			}
			if w := encode(t, want); got != w {
				t.Fatalf("%s%s served other data than the export rebuilds:\nserved:  %.600s\nrebuilt: %.600s", srv, url, got, w)
			}
		}
	}
	check("/api/suites", m.Suites())
	sp, ok := m.Suite("demo")
	if !ok || !sp.Submitted || len(sp.Runs) != 48 {
		t.Fatalf("the rebuilt demo page: submitted %t, %d runs", sp.Submitted, len(sp.Runs))
	}
	check("/api/suites/demo", sp)
	for _, r := range sp.Runs {
		rp, ok := m.Run("demo", r.Run)
		if !ok || len(rp.Turns) == 0 || rp.End == nil {
			t.Fatalf("run %s rebuilt with %d turns, end %v", r.Run, len(rp.Turns), rp.End)
		}
		check("/api/suites/demo/runs/"+r.Run, rp)
	}
}

// The suite page's report is the meter's: the bytes 'factline report
// --json' prints (meter.Report, written by measure.WriteJSON).
func TestTheSuitePageCarriesTheMetersReport(t *testing.T) {
	ctx := testCtx(t)
	b := demo(t)
	_, h := serveCaughtUp(t, ctx, b)
	r, err := meter.Report(ctx, b, "demo")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := measure.WriteJSON(&want, r); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, h.URL+"/api/suites/demo")
	var page pages.SuitePage
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	var a, b2 bytes.Buffer
	if err := json.Compact(&a, page.Report); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&b2, want.Bytes()); err != nil {
		t.Fatal(err)
	}
	if a.String() != b2.String() {
		t.Fatalf("the page's report differs from the meter's:\npage:  %.400s\nmeter: %.400s", a.String(), b2.String())
	}
	if !r.Complete {
		t.Fatal("the demo's report is not complete: the comparison proves little")
	}
}

// An unknown suite or run is a 404 page that names what is missing; so is
// a path the viewer has no page at.
func TestAnUnknownSuiteOrRunIsA404PageThatSaysSo(t *testing.T) {
	ctx := testCtx(t)
	_, h := serveCaughtUp(t, ctx, demo(t))
	for url, want := range map[string]string{
		"/suites/nosuch":                          `the log holds no suite named &#34;nosuch&#34;`,
		"/suites/demo/runs/nosuch":                `suite &#34;demo&#34; has no run named &#34;nosuch&#34;`,
		"/suites/nosuch/runs/fix-sum-stall-on-t1": `the log holds no suite named &#34;nosuch&#34;, so no run`,
		"/elsewhere":                              `the viewer has no page at /elsewhere`,
		"/api/suites/nosuch":                      `no suite named \"nosuch\"`,
	} {
		status, body := get(t, h.URL+url)
		if status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", url, status)
		}
		if !strings.Contains(body, want) {
			t.Errorf("%s: the page does not say %q:\n%.800s", url, want, body)
		}
	}
}
