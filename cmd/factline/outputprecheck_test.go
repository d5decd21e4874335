package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --junit file or --out directory that cannot be written is found
// before the suite is submitted: before, the whole suite ran, the report
// was printed, and then the job exited 1 with its JUnit lost (and its
// gates unread). Each exits 2 naming the flag, as a file the command was
// given that is unusable does, and nothing is submitted; a --junit file
// that is only missing is no mistake (it is written after the run).
func TestRunChecksItsOutputsBeforeSubmitting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name string
		args []string
		says string
	}{
		{"--junit in a missing directory", []string{"--junit", filepath.Join(dir, "nodir", "junit.xml")}, "--junit " + filepath.Join(dir, "nodir", "junit.xml")},
		{"--junit a directory", []string{"--junit", dir}, "--junit " + dir},
		{"--out a file", []string{"--out", file}, "--out " + file},
	} {
		store := filepath.Join(dir, "job"+string(rune('a'+i)))
		code, out, errOut := runCLI(t, append([]string{"run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("%s: exit %d, want 2 naming %q\nstdout %s\nstderr %s", c.name, code, c.says, out, errOut)
		}
		if strings.Contains(out, `suite "tiny":`) {
			t.Errorf("%s: the suite was run before the output was found unusable:\n%s", c.name, out)
		}
	}
	// A --junit file in an existing directory, and an --out directory
	// not made yet, are written after the run.
	junit, outDir := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "reports", "nightly")
	code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", filepath.Join(dir, "ok"), "--fsync", "interval", "--junit", junit, "--out", outDir)
	if code != 0 {
		t.Fatalf("a new --junit file and --out directory: exit %d\n%s", code, errOut)
	}
	for _, p := range []string{junit, filepath.Join(outDir, "report.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("not written: %v", err)
		}
	}
}
