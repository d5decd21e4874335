package main

import (
	"strings"
	"testing"
)

// A FILTER that is no subject filter of facts is a mistake in the call:
// exit 2 naming the FILTER and what is wrong with it. It reached the
// server, which answered with 'nats: no responders available for
// request' (an empty token) or 'invalid subject name', exit 1, naming
// neither the flag nor the rule.
func TestAFilterThatIsNoSubjectFilterIsAUsageError(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tail", "fact..x", "--no-follow"}, `FILTER "fact..x": token 2 is empty`},
		{[]string{"tail", "fact.demo. x", "--no-follow"}, `FILTER "fact.demo. x": white space`},
		{[]string{"tail", "fact.>.x", "--no-follow"}, `FILTER "fact.>.x": ">" may only be the last token`},
		{[]string{"tail", "ctl.>", "--no-follow"}, `FILTER "ctl.>": facts' subjects start with fact.`},
		{[]string{"tail", "--run", "a.b", "--no-follow"}, `--run "a.b"`},
		{[]string{"export", "fact..x", "--out", "/dev/null"}, `FILTER "fact..x"`},
		{[]string{"export", "--filter", "bad filter", "--out", "/dev/null"}, `--filter "bad filter"`},
	} {
		code, out, errOut := runCLI(t, append(tc.args, "--store", store)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, want 2 saying %q\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
		}
	}
	for _, args := range [][]string{{"tail", "fact.demo.*.run.ended", "--no-follow", "--since", "start"}, {"tail", "*.demo.>", "--no-follow", "--since", "start"}, {"export", "fact.demo.>", "--out", "/dev/null"}} {
		if code, out, errOut := runCLI(t, append(args, "--store", store)...); code != 0 {
			t.Errorf("%q: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}
