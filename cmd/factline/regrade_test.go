package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// regrade appends a new grade revision for the runs whose instruments
// changed, keeps the earlier one, and says so run by run; a run whose case
// has none of the file's instruments is skipped.
func TestRegradeAppendsNewRevisions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	// Version 2 of fix-sum's tests: a check the repaired sum.sh fails.
	grading := filepath.Join(dir, "tests-v2.yaml")
	if err := os.WriteFile(grading, []byte("instruments:\n  - {id: tests, kind: command, version: \"2\", command: \"false\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "regrade", "tiny", "--grading", grading, "--store", store, "--work-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("regrade exited %d: %s", code, errOut)
	}
	for _, want := range []string{"fix-sum-stall-on-t1: revision 2, failed (was revision 1, passed)", "regraded 1 of 2 runs of tiny, 1 with a new revision", "read-only-stall-on-t1: skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("regrade output lacks %q:\n%s", want, out)
		}
	}
	// The flip is a grade.conflict: regrade says the attempt is now
	// disputed, what that does to the report, and how it is settled.
	for _, want := range []string{"fix-sum-stall-on-t1: revision 2 conflicts with revision 1 on tests", "now disputed",
		"the suite is not complete", "settles it", "factline regrade tiny --run fix-sum-stall-on-t1"} {
		if !strings.Contains(out, want) {
			t.Errorf("regrade output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "report", "tiny", "--store", store, "--json")
	if code != 0 || !strings.Contains(out, `"revision": 2`) || !strings.Contains(out, `"outcome": "disputed"`) {
		t.Fatalf("the report does not read revision 2 as disputed:\n%s", out)
	}
	// Again with the same file: the results are reused, nothing changes.
	code, out, errOut = runCLI(t, "regrade", "tiny", "--grading", grading, "--run", "fix-sum-stall-on-t1", "--store", store)
	if code != 0 || !strings.Contains(out, "unchanged at revision 2") {
		t.Fatalf("regrade again: exit %d, %s %s", code, out, errOut)
	}
	// The audit re-derives both revisions and the conflict between them
	// under the grader's rules: an honest regrade holds every invariant.
	if code, out, _ := runCLI(t, "audit", "--store", store, "--finished"); code != 0 {
		t.Fatalf("the audit of a regraded suite: exit %d\n%s", code, out)
	}
}

func TestRegradeRefusesWhatItCannotDo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	grading := filepath.Join(dir, "g.yaml")
	if err := os.WriteFile(grading, []byte("instruments:\n  - {id: tests, kind: command, command: \"true\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"regrade", "tiny", "--store", dir}, 2, "--grading FILE is required"},
		{[]string{"regrade", "tiny", "--grading", grading, "--instrument", "lint", "--store", dir}, 2, "--instrument lint"},
		{[]string{"regrade", "tiny", "--grading", filepath.Join(dir, "none.yaml"), "--store", dir}, 2, "--grading"},
		{[]string{"regrade", "--grading", grading}, 2, "name one suite"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
