package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// errSuite writes a one-case suite whose scripted model fails with a
// provider error every time: a harness error, which retry runs again.
func errSuite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"case.yaml":          "id: flaky\ninstruction: say hi\nbudget: {steps: 2}\ngrading:\n  instruments:\n    - {id: any, kind: scope, allow: ['*']}\n",
		"t.yaml":             "id: t\nmodel: {provider: scripted, scripts: scripts}\n",
		"scripts/flaky.yaml": "turns:\n  - error: bad_request\n",
		"suite.yaml":         "name: flaky\ncases: [{path: case.yaml}]\ntreatments: [{path: t.yaml}]\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// An attempt that ended as a harness error is run again as a new run that
// names the one it retries; the report counts the newest run and lists
// every earlier one; retrying again chains on, and a suite with nothing
// errored has nothing to retry.
func TestRetryRunsHarnessErrorsAgainAndHidesNothing(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	// Its one attempt a harness error, the run says so in its status.
	if code, _, errOut := runCLI(t, "run", errSuite(t), "--store", store, "--fsync", "interval"); code != exitAllHarnessErrors {
		t.Fatalf("run exited %d, want %d (every attempt a harness error): %s", code, exitAllHarnessErrors, errOut)
	}
	code, out, errOut := runCLI(t, "retry", "flaky", "--store", store)
	if code != 0 || !strings.Contains(out, "retrying flaky-t-t1 (flaky/t trial 1) as flaky-t-t1-retry2") || !strings.Contains(out, "retried") {
		t.Fatalf("retry: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "retry", "flaky", "--store", store, "--run", "flaky-t-t1")
	if code != 0 || !strings.Contains(out, "as flaky-t-t1-retry3") {
		t.Fatalf("retry again: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "report", "flaky", "--store", store, "--json")
	if code != 0 {
		t.Fatal("report failed")
	}
	var r struct {
		Attempts []struct {
			Run     string
			Status  string
			Retried []struct{ Run, Status string }
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	a := r.Attempts
	if len(a) != 1 || a[0].Run != "flaky-t-t1-retry3" || len(a[0].Retried) != 2 ||
		a[0].Retried[0].Run != "flaky-t-t1" || a[0].Retried[0].Status != "errored" || a[0].Retried[1].Run != "flaky-t-t1-retry2" {
		t.Fatalf("attempts %+v: want the newest run counted and both earlier ones listed", a)
	}
	if !strings.Contains(out, `"retried": 1`) {
		t.Fatalf("the treatment does not count the retried attempt:\n%s", out)
	}
	if code, out, errOut := runCLI(t, "audit", "--store", store, "--finished"); code != 0 {
		t.Fatalf("audit after retries: exit %d\n%s\n%s", code, out, errOut)
	}
	// A run ID the suite does not hold is a mistake (a typo, another
	// suite's run), not an attempt with nothing to retry: it exits 1
	// naming it, where it once said "nothing to retry" and exited 0, a
	// CI job's retry step passing on a run it never looked at.
	code, out, errOut = runCLI(t, "retry", "flaky", "--store", store, "--run", "nope", "--run", "flaky-t-t1-retry3")
	if code != 1 || !strings.Contains(errOut, `--run nope: suite flaky has no run "nope"`) || strings.Contains(out, "retrying") {
		t.Fatalf("retry of a run the suite does not hold: exit %d, want 1 naming it and retrying nothing\n%s\n%s", code, out, errOut)
	}
}

// A suite with no attempt ended as a harness error has nothing to retry:
// retry says so and exits 0.
func TestRetryOfNothingErroredSaysSo(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	for _, args := range [][]string{{}, {"--run", "read-only-stall-on-t1"}} {
		code, out, errOut := runCLI(t, append([]string{"retry", "tiny", "--store", store}, args...)...)
		if code != 0 || !strings.Contains(out, "nothing to retry") {
			t.Errorf("retry %v of a suite with nothing errored: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
}

// Retrying a suite the store does not hold names the suite once, under
// the command's own prefix, not the command's name twice.
func TestRetryOfASuiteNotInTheLogSaysSoOnce(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	if code, out, errOut := runCLI(t, "run", errSuite(t), "--store", store, "--fsync", "interval"); code != exitAllHarnessErrors {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut := runCLI(t, "retry", "nosuch", "--store", store)
	if code != 1 || !strings.Contains(errOut, "suite nosuch was never submitted") || strings.Contains(errOut, "retry: retry:") {
		t.Errorf("retry of a suite not in the log: exit %d, %q", code, errOut)
	}
}
