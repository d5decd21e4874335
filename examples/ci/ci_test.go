// Package ci_test runs the CI example's job the way a CI system would.
package ci_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// factline builds the binary the job calls.
func factline(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "factline")
	if out, err := testutil.GoBuild(bin, "../../cmd/factline").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/factline: %v\n%s", err, out)
	}
	return bin
}

// Must show: the CI job fails on a regression. The baseline is the
// example's suite with the stall handler on, exported; the change under
// test turns it off (the same suite name and cases), so the misread case,
// which recovers only with the stall handler's feedback, fails in both
// trials: 33 points lost, more than the 5 the job allows. The job exits 3
// and leaves the JUnit file and the comparison for people.
func TestTheCIJobFailsOnARegression(t *testing.T) {
	bin := factline(t)
	dir := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(bin, append([]string{name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("factline %s %v: %v\n%s", name, args, err, out)
		}
	}
	run("run", "suite.yaml", "--store", filepath.Join(dir, "main"), "--fsync", "interval")
	baseline := filepath.Join(dir, "baseline.flx")
	run("export", "fact.ci-demo.>", "--store", filepath.Join(dir, "main"), "--out", baseline)

	demo, err := filepath.Abs("../demo")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	off := strings.ReplaceAll(string(src), "../demo", demo)
	off = strings.Replace(off, "stall-on.yaml", "stall-off.yaml", 1)
	if !strings.Contains(off, "stall-off.yaml") {
		t.Fatal("the example's suite no longer names stall-on.yaml: edit the test")
	}
	changed := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(changed, []byte(off), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command("./ci.sh", changed, baseline, out)
	cmd.Env = append(os.Environ(), "FACTLINE="+bin)
	text, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("the job on a regression: %v, want exit 3\n%s", err, text)
	}
	if !strings.Contains(string(text), "--fail-if-worse 5: B's pass rate is 33.3 points under A's") {
		t.Errorf("the job does not say which gate failed:\n%s", text)
	}
	md, err := os.ReadFile(filepath.Join(out, "compare.md"))
	if err != nil || !strings.Contains(string(md), "**Regressed:** `misread`") {
		t.Errorf("compare.md: %v\n%s", err, md)
	}
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil || strings.Count(string(junit), "<testcase ") != 6 || strings.Count(string(junit), "<failure ") != 2 {
		t.Errorf("junit.xml: %v, want 6 test cases, 2 failures\n%s", err, junit)
	}
}

// The job reads the suite's name from its file as YAML has it: a
// comment after the name (as docs/first-suite.md writes one) or quotes
// around it are no part of it. Before, the comment was read into the
// name, and the job stopped with a usage error before running anything.
func TestTheCIJobReadsANameWithAComment(t *testing.T) {
	bin := factline(t)
	dir := t.TempDir()
	if out, err := exec.Command(bin, "run", "suite.yaml", "--store", filepath.Join(dir, "main"), "--fsync", "interval").CombinedOutput(); err != nil {
		t.Fatalf("factline run: %v\n%s", err, out)
	}
	baseline := filepath.Join(dir, "baseline.flx")
	if out, err := exec.Command(bin, "export", "fact.ci-demo.>", "--store", filepath.Join(dir, "main"), "--out", baseline).CombinedOutput(); err != nil {
		t.Fatalf("factline export: %v\n%s", err, out)
	}
	demo, err := filepath.Abs("../demo")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range []string{
		"name: ci-demo                 # names the suite's facts and its report",
		`name: "ci-demo" # quoted, with a comment`,
	} {
		text := strings.ReplaceAll(string(src), "../demo", demo)
		text = strings.Replace(text, "name: ci-demo", line, 1)
		if !strings.Contains(text, line) {
			t.Fatal("the example's suite no longer has 'name: ci-demo': edit the test")
		}
		suite := filepath.Join(dir, "suite"+string(rune('a'+i))+".yaml")
		if err := os.WriteFile(suite, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("./ci.sh", suite, baseline, filepath.Join(dir, "out"+string(rune('a'+i))))
		cmd.Env = append(os.Environ(), "FACTLINE="+bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("the job on %q, the baseline's own suite: %v, want exit 0\n%s", line, err, out)
		}
	}
}
