package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// A suite measured with nothing graded passed or failed — every case
// without grading instruments, so every attempt abstained — has no pass
// rate, and without a gate run exits 0 as for any measured suite: a CI
// job goes green on a suite that measured nothing. The exit status stays
// (whether that should fail a job is a policy), but stderr says so and
// names the gate that fails the job on it; a --fail-under gate already
// fails it, with its own message, and then no warning is added.
func TestRunWarnsWhenNothingWasGraded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]string{
		"suite.yaml":         "name: ungraded\ncases: [{path: case.yaml}]\ntreatments: [{path: t.yaml}]\ntrials: 2\n",
		"case.yaml":          "id: hello\ninstruction: say hi\nfixture: fixture\nbudget: {steps: 2}\n",
		"t.yaml":             "id: t\nmodel: {provider: scripted, scripts: scripts}\n",
		"scripts/hello.yaml": "turns:\n  - text: hi\n",
		"fixture/README":     "nothing here\n",
	})
	suite := filepath.Join(dir, "suite.yaml")
	code, out, errOut := runCLI(t, "run", suite, "--store", filepath.Join(dir, "a"), "--fsync", "interval")
	const want = "warning: treatment t of suite ungraded: no attempt was graded passed or failed (2 abstained)"
	if code != 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--fail-under") {
		t.Fatalf("nothing graded, no gate: exit %d, want 0 with %q and the gate that fails on it on stderr\nstdout %s\nstderr %s", code, want, out, errOut)
	}
	if strings.Contains(out, "warning:") {
		t.Errorf("the warning is on stdout, where a --json report would be:\n%s", out)
	}
	code, out, errOut = runCLI(t, "run", suite, "--store", filepath.Join(dir, "b"), "--fsync", "interval", "--fail-under", "0.5")
	if code != exitGateFailed || strings.Contains(errOut, "warning: treatment") {
		t.Fatalf("nothing graded, --fail-under 0.5: exit %d, want %d and the gate's message alone\nstdout %s\nstderr %s", code, exitGateFailed, out, errOut)
	}
}
