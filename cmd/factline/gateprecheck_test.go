package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What run's gates and --baseline need is checked before the suite is
// submitted: a CI job whose baseline is missing, names another suite, or
// whose gate names a scorer no case declares learns it at once, not after
// the whole suite has run (on a real model, an hour of calls) only to be
// told its gate could not be decided. Each call exits as it did after the
// run (2 for the call's mistake, 1 for a baseline without the suite), and
// nothing of the suite is submitted: the store holds no suite.
func TestRunChecksItsGatesBeforeSubmitting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A baseline that holds suite tiny, and none other.
	base := filepath.Join(dir, "base")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", base, "--fsync", "interval"); code != 0 {
		t.Fatalf("run the baseline: exit %d\n%s", code, errOut)
	}
	export := filepath.Join(dir, "base.flx")
	if code, _, errOut := runCLI(t, "export", "--store", base, "--out", export); code != 0 {
		t.Fatalf("export the baseline: exit %d\n%s", code, errOut)
	}
	for i, c := range []struct {
		name string
		args []string
		code int
		says []string
	}{
		{"a missing export", []string{"--baseline", "tiny@" + filepath.Join(dir, "missing.flx"), "--fail-if-worse", "5"},
			2, []string{"--baseline", "missing.flx", "no such file"}},
		{"a baseline without the suite", []string{"--baseline", "nightly@" + export, "--fail-if-worse", "5"},
			1, []string{"--baseline", "suite nightly was never submitted"}},
		{"a scorer no case declares", []string{"--fail-under", "scorer=qualty:0.5"},
			2, []string{"--fail-under scorer=qualty:0.5", "no case of suite tiny declares scorer qualty", "declares no scorer"}},
		{"a scorer no case declares, against a baseline", []string{"--baseline", "tiny@" + export, "--fail-if-worse", "scorer=qualty:0.1"},
			2, []string{"--fail-if-worse scorer=qualty:0.1", "no case of suite tiny declares scorer qualty"}},
	} {
		store := filepath.Join(dir, "job"+string(rune('a'+i)))
		code, out, errOut := runCLI(t, append([]string{"run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"}, c.args...)...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\nstdout %s\nstderr %s", c.name, code, c.code, out, errOut)
			continue
		}
		for _, want := range c.says {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, want, errOut)
			}
		}
		if strings.Contains(out, `suite "tiny":`) {
			t.Errorf("%s: the suite was submitted and run before the mistake was found:\n%s", c.name, out)
		}
		if _, err := os.Stat(filepath.Join(store, "jetstream")); err == nil {
			t.Errorf("%s: a store was opened at %s before the mistake was found", c.name, store)
		}
	}
}
