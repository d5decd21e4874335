package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeSuite writes a suite directory of files (the demo's read-only case
// is copied in as cases/read-only) and returns its suite file.
func writeSuite(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, src := range []string{"cases/read-only/case.yaml", "cases/read-only/fixture/NOTES.md"} {
		b, err := os.ReadFile(filepath.Join("../../examples/demo", src))
		if err != nil {
			t.Fatal(err)
		}
		files[src] = string(b)
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// Under its report table, run says why runs were harness errors or
// excluded: each reason once, with how many runs it holds and one of them.
func TestRunSaysWhyRunsWereHarnessErrorsOrExcluded(t *testing.T) {
	t.Parallel()
	suite := writeSuite(t, map[string]string{
		"suite.yaml": "name: why\ncases:\n  - {path: cases/read-only/case.yaml}\n" +
			"treatments:\n  - {path: treatments/broken.yaml}\n  - {path: treatments/busy.yaml}\n  - {path: treatments/fine.yaml}\ntrials: 2\n" +
			"valid_outcomes: [done, blocked, incomplete, needs_human]\n",
		"treatments/broken.yaml": "id: broken\nmodel: {provider: scripted, scripts: ../broken}\n",
		"treatments/busy.yaml":   "id: busy\nmodel: {provider: scripted, scripts: ../busy}\n",
		"treatments/fine.yaml":   "id: fine\nmodel: {provider: scripted, scripts: ../fine}\n",
		"broken/read-only.yaml":  "turns:\n  - error: unavailable\n",
		"busy/read-only.yaml":    "turns:\n" + strings.Repeat("  - calls: [{name: list_files, args: {dir: .}}]\n", 4),
		"fine/read-only.yaml":    "turns:\n  - text: Release 2.4 uses port 9090 by default.\n",
	})
	code, out, errOut := runCLI(t, "run", suite, "--store", t.TempDir(), "--fsync", "interval")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	table := strings.Index(out, " treatment ")
	if table < 0 {
		t.Fatalf("no report table:\n%s", out)
	}
	under := out[table:]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`harness error +model_error: model scripted: unavailable.* \(2 runs, e\.g\. read-only-broken-t[12]\)`),
		regexp.MustCompile(`excluded +ended exhausted \(step_limit\), not a valid outcome of this suite \(2 runs, e\.g\. read-only-busy-t[12]\)`),
	} {
		if !want.MatchString(under) {
			t.Errorf("under the table, no line matching %s:\n%s", want, under)
		}
	}
	if strings.Contains(under, "read-only-fine-") {
		t.Errorf("a run that counts is listed as excluded:\n%s", under)
	}
}
