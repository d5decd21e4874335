package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A CI job that ends a run with SIGTERM (its own timeout, a cancelled
// pipeline) or Ctrl-C still gets the run's --junit file, as --timeout
// gives it: what ran so far, the attempts not settled skipped as
// awaiting. Before, an interrupted run wrote none, and the CI's test view
// had nothing to show for the job.
func TestAnInterruptedRunWritesItsJUnit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, junit := filepath.Join(dir, "store"), filepath.Join(dir, "junit.xml")
	r := startFactline(t, "run", writeSlowSuite(t), "--store", store, "--fsync", "interval", "--junit", junit)
	const run = "slow-scripted-t1"
	awaitFirstTurn(t, r, store, run)
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 2*time.Minute); code != 1 || !strings.Contains(r.errOut.String(), "interrupted") {
		t.Fatalf("SIGTERM: exit %d, want 1 saying it was interrupted\n%s", code, r.errOut.String())
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatalf("an interrupted run wrote no --junit file: %v", err)
	}
	for _, want := range []string{`tests="1"`, `skipped="1"`, `<testcase name="slow/scripted/1"`, `<skipped message="awaiting: running"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the interrupted run's JUnit lacks %q:\n%s", want, data)
		}
	}
	if !strings.Contains(r.errOut.String(), junit) {
		t.Errorf("stderr does not say the JUnit file was written:\n%s", r.errOut.String())
	}
}
