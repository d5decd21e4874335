package main

import (
	"strings"
	"testing"
)

// 'factline tail' asked for what it cannot show says so at once, as a
// usage error, instead of following a filter that can never match:
//   - a --kind this version does not know (a typo: stop.decide) — as
//     --kind with --control already is;
//   - a FILTER beside --run or --kind, which used to be dropped without a
//     word, so 'tail fact.demo.> --kind run.ended' showed every suite's.
func TestTailRefusesWhatItWouldIgnore(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--kind", "stop.decide"}, []string{`--kind "stop.decide"`, "stop.decided", "run.ended"}},
		{[]string{"fact.demo.>", "--kind", "run.ended"}, []string{`FILTER "fact.demo.>"`, "--kind", "fact.demo.*.run.ended"}},
		{[]string{"fact.other.>", "--run", "fix-add-scripted-t1"}, []string{`FILTER "fact.other.>"`, "--run"}},
	} {
		args := append([]string{"tail", "--store", store, "--since", "start", "--no-follow"}, tc.args...)
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" {
			t.Errorf("tail %v: exit %d, want 2 and nothing on stdout\nstdout: %s\nstderr: %s", tc.args, code, out, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("tail %v: stderr does not say %q:\n%s", tc.args, w, errOut)
			}
		}
	}
	// What is right still works: a known kind, a FILTER alone.
	if code, out, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", "run.ended"); code != 0 || strings.Count(out, "run.ended") != 1 {
		t.Errorf("tail --kind run.ended: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "tail", "fact.demo.*.run.ended", "--store", store, "--since", "start", "--no-follow"); code != 0 || strings.Count(out, "run.ended") != 1 {
		t.Errorf("tail FILTER: exit %d\n%s%s", code, out, errOut)
	}
}
