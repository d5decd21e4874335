package main

import (
	"strings"
	"testing"
)

// An operator who mistypes the action of 'factline suite' gives the flags
// every control takes too. The message must name the action, not the
// --store the parent command happens to lack, which sends them looking for
// what is wrong with a flag that is right.
func TestASuiteActionMistypedIsNamed(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"suite", "puase", "demo", "--store", store}, `unknown action "puase": want pause, resume, drain or cancel`},
		{[]string{"suite", "puase", "demo", "--store=" + store, "--reason", "why"}, `unknown action "puase"`},
		{[]string{"suite", "--store", store, "stop", "demo"}, `unknown action "stop"`},
		{[]string{"suite", "--store", store}, "want an action: factline suite pause|resume|drain|cancel SUITE"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "unknown flag") {
			t.Errorf("%v: exit %d, want 2 saying %q\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
		}
	}
}
