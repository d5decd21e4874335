package main

import (
	"strings"
	"testing"
)

// An audit asked for a suite or a run the log holds no fact of has audited
// nothing: exiting 0 with "every invariant holds" would let a CI gate with
// a misspelt name pass forever. It exits 1 naming what it did not find;
// the names the log holds still audit clean.
func TestAnAuditOfANameTheLogLacksFails(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--suite", "dmeo"}, `no fact of suite "dmeo"`},
		{[]string{"--run", "fix-add-scripted-t9"}, `no fact of run "fix-add-scripted-t9"`},
		{[]string{"--suite", "demo", "--run", "nosuch"}, `no fact of run "nosuch" of suite "demo"`},
		{[]string{"--suite", "dmeo", "--json"}, `no fact of suite "dmeo"`},
	} {
		args := append([]string{"audit", "--store", store}, tc.args...)
		code, out, errOut := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(out, "every invariant holds") {
			t.Errorf("audit %v: exit %d, want 1 saying %q\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
		}
	}
	for _, args := range [][]string{{"--suite", "demo"}, {"--run", "fix-add-scripted-t1"}, {"--suite", "demo", "--run", "fix-add-scripted-t1"}} {
		if code, out, errOut := runCLI(t, append([]string{"audit", "--store", store, "--finished"}, args...)...); code != 0 || !strings.Contains(out, "every invariant holds") {
			t.Errorf("audit %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// 'factline replay PROJECTION --run ID' of a run the log holds no fact of
// rebuilt an empty projection and exited 0: a misspelt run looked like a
// run with nothing in it. It exits 1 naming the run.
func TestAReplayOfARunTheLogLacksFails(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	for _, args := range [][]string{{"--store", store}, {"--store", store, "--json"}} {
		code, out, errOut := runCLI(t, append([]string{"replay", "runs", "--run", "fix-add-scripted-t9"}, args...)...)
		if code != 1 || !strings.Contains(errOut, `no fact of run "fix-add-scripted-t9"`) {
			t.Errorf("replay %v of a run the log lacks: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
	}
	if code, out, errOut := runCLI(t, "replay", "runs", "--run", "fix-add-scripted-t1", "--store", store, "--json"); code != 0 || !strings.Contains(out, `"run": "fix-add-scripted-t1"`) {
		t.Errorf("replay of the run the log holds: exit %d\n%s%s", code, out, errOut)
	}
}
