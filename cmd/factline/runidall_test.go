package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twinSuites runs errSuite's one-case suite twice into one store, as
// flaky and as flaky2: two suites whose one run has the same ID,
// flaky-t-t1, each ended as a harness error.
func twinSuites(t *testing.T) (store string) {
	t.Helper()
	store = filepath.Join(t.TempDir(), "store")
	first := errSuite(t)
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(filepath.Dir(first), "suite2.yaml")
	if err := os.WriteFile(second, []byte(strings.Replace(string(data), "name: flaky\n", "name: flaky2\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, suite := range []string{first, second} {
		if code, _, errOut := runCLI(t, "run", suite, "--store", store, "--fsync", "interval"); code != exitAllHarnessErrors {
			t.Fatalf("run %s: exit %d, want %d: %s", suite, code, exitAllHarnessErrors, errOut)
		}
	}
	return store
}

// replay --run of an ID two suites share shows both runs, each keyed by
// its suite, and says so; --suite shows the one suite's run alone.
func TestReplayOfARunIDTwoSuitesShareNamesThemAndSuitePicksOne(t *testing.T) {
	t.Parallel()
	store := twinSuites(t)
	code, out, errOut := runCLI(t, "replay", "runs", "--run", "flaky-t-t1", "--store", store)
	if code != 0 || !strings.Contains(out, `"suite": "flaky"`) || !strings.Contains(out, `"suite": "flaky2"`) ||
		!strings.Contains(errOut, "flaky, flaky2") || !strings.Contains(errOut, "--suite") {
		t.Fatalf("replay runs --run of a shared ID: exit %d\n%s\n%s\nwant both runs and a note naming both suites and --suite", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "replay", "history", "--run", "flaky-t-t1", "--suite", "flaky2", "--store", store)
	if code != 0 || !strings.Contains(out, `"flaky2/flaky-t-t1"`) || strings.Contains(out, `"flaky/flaky-t-t1"`) || strings.Contains(errOut, "--suite") {
		t.Fatalf("replay history --suite flaky2: exit %d\n%s\n%s\nwant flaky2's run alone", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "replay", "history", "--run", "flaky-t-t1", "--suite", "monthly", "--store", store)
	if code != 1 || !strings.Contains(errOut, `"monthly"`) {
		t.Fatalf("replay --suite of a suite without the run: exit %d %q, want 1 naming it", code, errOut)
	}
	if code, _, errOut := runCLI(t, "replay", "history", "--suite", "a.b", "--store", store); code != 2 {
		t.Fatalf("replay --suite a.b: exit %d %q, want a usage error", code, errOut)
	}
}

// audit --run of an ID two suites share audits both runs: its verdict
// names them, so that a pass is not read as one run's.
func TestAuditOfARunIDTwoSuitesShareNamesTheSuitesAudited(t *testing.T) {
	t.Parallel()
	store := twinSuites(t)
	code, out, errOut := runCLI(t, "audit", "--run", "flaky-t-t1", "--store", store)
	if code != 0 || !strings.Contains(out, `run "flaky-t-t1" of 2 suites (flaky, flaky2)`) {
		t.Fatalf("audit --run of a shared ID: exit %d\n%s\n%s\nwant its verdict naming both suites", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "audit", "--run", "flaky-t-t1", "--store", store, "--json")
	if code != 0 || !strings.Contains(out, `"suites": [`) || !strings.Contains(out, `"flaky2"`) {
		t.Fatalf("audit --run --json of a shared ID: exit %d\n%s\n%s\nwant the suites audited", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "audit", "--run", "flaky-t-t1", "--suite", "flaky", "--store", store)
	if code != 0 || strings.Contains(out, "flaky2") {
		t.Fatalf("audit --suite flaky --run: exit %d\n%s\n%s\nwant flaky's run alone", code, out, errOut)
	}
}

// trace --run sends what it reads as it reads it: a run ID two suites
// share is refused before anything is sent, naming the suites, from a
// store and from an export file alike.
func TestTraceOfARunIDTwoSuitesShareIsRefusedNamingThem(t *testing.T) {
	t.Parallel()
	store := twinSuites(t)
	export := filepath.Join(t.TempDir(), "twins.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", export); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	// Nothing listens there: a trace that got as far as sending would
	// say it could not reach it.
	const endpoint = "http://127.0.0.1:1"
	for _, src := range [][]string{{"--store", store}, {"--file", export}} {
		code, _, errOut := runCLI(t, append([]string{"trace", "--run", "flaky-t-t1", "--otlp-endpoint", endpoint}, src...)...)
		if code != 1 || !strings.Contains(errOut, "flaky, flaky2") || !strings.Contains(errOut, "--suite") || strings.Contains(errOut, endpoint) {
			t.Fatalf("trace --run of a shared ID from %v: exit %d %q, want 1 naming both suites, nothing sent", src, code, errOut)
		}
		code, _, errOut = runCLI(t, append([]string{"trace", "--run", "flaky-t-t1", "--suite", "monthly", "--otlp-endpoint", endpoint}, src...)...)
		if code != 1 || !strings.Contains(errOut, `"monthly"`) || !strings.Contains(errOut, "flaky, flaky2") {
			t.Fatalf("trace --suite of a suite without the run from %v: exit %d %q", src, code, errOut)
		}
	}
}

// retry SUITE --run keeps to SUITE: the other suite's run of the ID,
// errored too, is not retried.
func TestRetryOfARunIDTwoSuitesShareKeepsToItsSuite(t *testing.T) {
	t.Parallel()
	store := twinSuites(t)
	code, out, errOut := runCLI(t, "retry", "flaky2", "--run", "flaky-t-t1", "--store", store)
	if code != 0 || !strings.Contains(out, "as flaky-t-t1-retry2") {
		t.Fatalf("retry flaky2 --run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "tail", "--kind", "run.requested", "--since", "start", "--no-follow", "--store", store)
	if code != 0 || !strings.Contains(out, "flaky2/flaky-t-t1-retry2") || strings.Contains(out, "flaky/flaky-t-t1-retry2") {
		t.Fatalf("after retry flaky2: exit %d\n%s\n%s\nwant a retry in flaky2 alone", code, out, errOut)
	}
}

// The report's pointer to a run's history names the suite as well as the
// run: a run ID is unique within its suite only, and the command it
// shows is copied as it stands.
func TestTheReportsWhyPointsAtTheRunOfItsSuite(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	code, out, errOut := runCLI(t, "run", errSuite(t), "--store", store, "--fsync", "interval")
	if code != exitAllHarnessErrors || !strings.Contains(out, "replay history --suite flaky --run RUN") {
		t.Fatalf("run: exit %d\n%s\n%s\nwant the why pointing at replay history --suite flaky --run RUN", code, out, errOut)
	}
}

// regrade SUITE --run keeps to SUITE: the other suite's run of the ID
// keeps its one grade revision.
func TestRegradeOfARunIDTwoSuitesShareKeepsToItsSuite(t *testing.T) {
	t.Parallel()
	store := twinSuites(t)
	grading := filepath.Join(t.TempDir(), "any-v2.yaml")
	if err := os.WriteFile(grading, []byte("instruments:\n  - {id: any, kind: scope, version: \"2\", allow: ['none']}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "regrade", "flaky2", "--run", "flaky-t-t1", "--grading", grading, "--store", store, "--work-dir", t.TempDir())
	if code != 0 || !strings.Contains(out, "regraded 1 of 1 runs of flaky2") {
		t.Fatalf("regrade flaky2 --run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "tail", "--kind", "grade.verdict", "--since", "start", "--no-follow", "--store", store)
	if code != 0 || !strings.Contains(out, "flaky2/flaky-t-t1 grade.verdict      revision=2") || strings.Contains(out, "flaky/flaky-t-t1 grade.verdict      revision=2") {
		t.Fatalf("after regrade flaky2: exit %d\n%s\n%s\nwant a revision 2 in flaky2 alone", code, out, errOut)
	}
}

// Readers that show both suites' runs of a shared ID keep them apart:
// tail names suite/run on every line, and view's run pages and their
// data live under the suite, each suite's page linking its own run.
func TestTailAndViewOfARunIDTwoSuitesShareKeepThemApart(t *testing.T) {
	t.Parallel()
	store := twinSuites(t)
	code, out, errOut := runCLI(t, "tail", "--run", "flaky-t-t1", "--since", "start", "--no-follow", "--store", store)
	if code != 0 || !strings.Contains(out, "flaky/flaky-t-t1 run.requested") || !strings.Contains(out, "flaky2/flaky-t-t1 run.requested") {
		t.Fatalf("tail --run of a shared ID: exit %d\n%s\n%s\nwant each suite's run on lines naming it", code, out, errOut)
	}
	url := startView(t, "--store", store)
	for _, suite := range []string{"flaky", "flaky2"} {
		status, page := fetch(t, url+"api/suites/"+suite+"/runs/flaky-t-t1")
		if status != http.StatusOK || !strings.Contains(page, `"suite": "`+suite+`"`) {
			t.Fatalf("the run data of %s/flaky-t-t1: %d\n%s", suite, status, page)
		}
		status, page = fetch(t, url+"suites/"+suite)
		if status != http.StatusOK || !strings.Contains(page, `href="/suites/`+suite+`/runs/flaky-t-t1"`) {
			t.Fatalf("the page of suite %s: %d, want a link to its own run\n%s", suite, status, page)
		}
	}
}
