package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A runner drives a parent and its child on two workers, so a local run
// with --instances 1 cannot start the child of a delegating treatment
// while its parent waits for it: each delegate call would hang until the
// runner's decision timeout (10 minutes) cancels the child. run says so on
// stderr before it submits anything, naming the treatment and the fix,
// rather than leave the suite to hang without a word.
func TestRunWarnsThatOneInstanceCannotRunAChildBesideItsParent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "run", "testdata/delegating/suite.yaml", "--store", filepath.Join(dir, "store"),
		"--fsync", "interval", "--instances", "1", "--timeout", "3s")
	for _, want := range []string{"delegating", "--instances 1", "child", "--instances 2"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("exit %d; stderr lacks %q:\n%s", code, want, errOut)
		}
	}
	// Two instances run the child beside its parent: no warning.
	code, _, errOut = runCLI(t, "run", "testdata/delegating/suite.yaml", "--store", filepath.Join(dir, "store2"),
		"--fsync", "interval", "--timeout", "60s")
	if code != 0 || strings.Contains(errOut, "--instances 1") {
		t.Fatalf("two instances: exit %d\n%s", code, errOut)
	}
}
