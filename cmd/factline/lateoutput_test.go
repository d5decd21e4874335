package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// fullDiskFile makes a file at dir/name whose every write fails for want
// of space (a link to /dev/full): a --junit or --out file that passes the
// check before the suite is submitted and fails when it is written after
// the run, as on a disk that filled meanwhile. It works as root, whom a
// read-only directory would not stop.
func fullDiskFile(t *testing.T, dir, name string) string {
	t.Helper()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("this test needs /dev/full: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeHelloSuite writes suite NAME: one case under one treatment, 2
// trials. Graded, its attempts pass (a scope instrument on a workspace
// nobody changes): a pass-rate gate holds. Ungraded, they abstain: a
// pass-rate gate fails.
func writeHelloSuite(t *testing.T, name string, graded bool) string {
	t.Helper()
	dir := t.TempDir()
	grading := ""
	if graded {
		grading = "grading:\n  instruments:\n    - {id: unchanged, kind: scope, allow: ['*.tmp']}\n"
	}
	testutil.WriteTree(t, dir, map[string]string{
		"suite.yaml":         "name: " + name + "\ncases: [{path: case.yaml}]\ntreatments: [{path: t.yaml}]\ntrials: 2\n",
		"case.yaml":          "id: hello\ninstruction: say hi\nfixture: fixture\nbudget: {steps: 4}\n" + grading,
		"t.yaml":             "id: t\nmodel: {provider: scripted, scripts: scripts}\n",
		"scripts/hello.yaml": "turns:\n  - text: Done.\n",
		"fixture/README":     "nothing here\n",
	})
	return filepath.Join(dir, "suite.yaml")
}

// A --junit or --out file that cannot be written after the suite was
// measured (it passed the check before the run: the disk filled since)
// no longer skips the gates. The report is printed, the gates are held
// to it, and stderr names each file not written and why. A gate that
// fails still exits 3 (the verdict on the agent wins); with every gate
// holding, the job exits 1, saying the gates hold, because the artifacts
// it asked for are missing. Before, either way it exited 1 with the
// write's error alone: whether the agent passed its gates went unsaid.
func TestAWriteThatFailsAfterTheRunStillHoldsTheGates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	junit := fullDiskFile(t, filepath.Join(dir, "j1"), "junit.xml")
	outDir := filepath.Join(dir, "out1")
	fullDiskFile(t, outDir, "report.json")
	code, out, errOut := runCLI(t, "run", writeHelloSuite(t, "holds", true), "--store", filepath.Join(dir, "a"), "--fsync", "interval",
		"--junit", junit, "--out", outDir, "--fail-under", "0.5")
	if code != 1 {
		t.Fatalf("gates hold, --junit and --out unwritable: exit %d, want 1\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{"--junit " + junit, filepath.Join(outDir, "report.json"), "no space left on device", "every gate holds"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("gates hold, writes failed: stderr lacks %q\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "suite holds") {
		t.Errorf("the report's table is not printed:\n%s", out)
	}
	if data, err := os.ReadFile(filepath.Join(outDir, "report.csv")); err != nil || len(data) == 0 {
		t.Errorf("--out's other files are not written when one fails: %v", err)
	}

	junit = fullDiskFile(t, filepath.Join(dir, "j2"), "junit.xml")
	code, out, errOut = runCLI(t, "run", writeHelloSuite(t, "fails", false), "--store", filepath.Join(dir, "b"), "--fsync", "interval",
		"--junit", junit, "--fail-under", "0.5")
	if code != exitGateFailed {
		t.Fatalf("a gate fails, --junit unwritable: exit %d, want %d\nstdout %s\nstderr %s", code, exitGateFailed, out, errOut)
	}
	for _, want := range []string{"--junit " + junit, "no space left on device", "gate failed"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("a gate fails, the write failed: stderr lacks %q\n%s", want, errOut)
		}
	}
}

// A run cut off by --timeout whose --junit file cannot be written still
// ends as a run cut off: exit 4, saying it gave up and how to go on, with
// the file not written named on stderr. Before, the write's error
// replaced all of it, exit 1.
func TestATimedOutRunWhoseJUnitCannotBeWrittenStillExits4(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junit := fullDiskFile(t, filepath.Join(dir, "j"), "junit.xml")
	code, out, errOut := runCLI(t, "run", writeSlowSuite(t), "--store", filepath.Join(dir, "store"), "--fsync", "interval",
		"--junit", junit, "--timeout", "3s")
	if code != exitIncomplete {
		t.Fatalf("--timeout, --junit unwritable: exit %d, want %d\nstdout %s\nstderr %s", code, exitIncomplete, out, errOut)
	}
	for _, want := range []string{"--junit " + junit + " not written", "no space left on device", "gave up after 3s (--timeout)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("--timeout, --junit unwritable: stderr lacks %q\n%s", want, errOut)
		}
	}
}
