package main

import (
	"strings"
	"testing"
)

// A control whose own arguments are wrong is a mistake in how the command
// was called: exit 2 naming the flag or argument, before any store is
// opened or run looked up. It was exit 1 with the signal's wire field
// ("control: args_digest: required"), which names no flag the operator
// can give, and only after the run was found.
func TestAControlsOwnArgumentsAreUsageErrors(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	run := "fix-add-scripted-t1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"approve", run, "op1"}, "--args-digest"},
		{[]string{"approve", run, "op1", "--args-digest", "sha256:00"}, `--args-digest "sha256:00"`},
		{[]string{"approve", run, "op1", "--args-digest", "00ab"}, `--args-digest "00ab"`},
		{[]string{"approve", run, "", "--args-digest", "sha256:" + strings.Repeat("a", 64)}, "OPERATION"},
		{[]string{"reject", run, ""}, "OPERATION"},
		{[]string{"resolve", run, "", "--applied"}, "OPERATION"},
		{[]string{"steer", run, ""}, "TEXT"},
		{[]string{"steer", run, "  "}, "TEXT"},
	} {
		args := append(tc.args, "--store", store, "--wait", "0")
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--help") {
			t.Errorf("%q: exit %d, want 2 naming %s\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
		}
	}
}
