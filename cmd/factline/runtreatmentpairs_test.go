package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// duo writes a suite named duo of two demo cases under two treatments
// with these IDs, the demo's stall-on and stall-off under those names, one
// trial each, and returns its path.
func duo(t *testing.T, dir, on, off string) string {
	t.Helper()
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	for id, from := range map[string]string{on: "stall-on", off: "stall-off"} {
		data, err := os.ReadFile(filepath.Join(demo, "treatments", from+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(data), "id: "+from, "id: "+id, 1)
		text = strings.Replace(text, "scripts: ../scripts", "scripts: "+filepath.Join(demo, "scripts"), 1)
		if err := os.WriteFile(filepath.Join(dir, id+".yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	suite := "name: duo\ncases:\n" +
		"  - {path: " + filepath.Join(demo, "cases/read-only/case.yaml") + "}\n" +
		"  - {path: " + filepath.Join(demo, "cases/fix-sum/case.yaml") + "}\n" +
		"treatments:\n  - {path: " + on + ".yaml}\n  - {path: " + off + ".yaml}\n" +
		"trials: 1\ninputs: {allow_outside: [" + demo + "]}\n"
	path := filepath.Join(dir, "duo-"+on+".yaml")
	if err := os.WriteFile(path, []byte(suite), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A suite whose treatments were renamed since its baseline pairs none of
// them: run --baseline says so before submitting anything (exit 2, as
// compare does), naming both sides' treatments and the --treatment flag
// that pairs them, and run takes that flag as compare does. Before, run
// ran the whole suite and then exited 1 telling the job to pass a
// --treatment flag run did not have.
func TestRunBaselinePairsRenamedTreatments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "base")
	if code, _, errOut := runCLI(t, "run", duo(t, dir, "stall-on", "stall-off"), "--store", base, "--fsync", "interval"); code != 0 {
		t.Fatalf("run the baseline: exit %d\n%s", code, errOut)
	}
	export := filepath.Join(dir, "base.flx")
	if code, _, errOut := runCLI(t, "export", "--store", base, "--out", export); code != 0 {
		t.Fatalf("export the baseline: exit %d\n%s", code, errOut)
	}
	renamed := duo(t, dir, "on2", "off2")

	store := filepath.Join(dir, "unpaired")
	code, out, errOut := runCLI(t, "run", renamed, "--store", store, "--fsync", "interval", "--baseline", "duo@"+export, "--fail-if-worse", "50")
	if code != 2 || !strings.Contains(errOut, "stall-on, stall-off") || !strings.Contains(errOut, "on2, off2") ||
		!strings.Contains(errOut, "--treatment A_NAME=B_NAME") {
		t.Fatalf("renamed treatments, no --treatment: exit %d, want 2 naming both sides' treatments and --treatment\nstdout %s\nstderr %s", code, out, errOut)
	}
	if strings.Contains(out, `suite "duo":`) {
		t.Fatalf("the suite was run before its baseline was found to pair no treatment:\n%s", out)
	}

	code, out, errOut = runCLI(t, "run", renamed, "--store", filepath.Join(dir, "paired"), "--fsync", "interval",
		"--baseline", "duo@"+export, "--treatment", "stall-on=on2", "--treatment", "stall-off=off2", "--fail-if-worse", "50")
	if code != 0 || !strings.Contains(out, "stall-on → on2") || !strings.Contains(out, "stall-off → off2") {
		t.Fatalf("renamed treatments paired by --treatment: exit %d, want 0 comparing stall-on → on2 and stall-off → off2\nstdout %s\nstderr %s", code, out, errOut)
	}

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--treatment", "a=b"}, "--treatment goes with --baseline"},
		{[]string{"--baseline", "duo@" + export, "--treatment", "nope=on2"}, `treatment "nope" of suite A`},
		{[]string{"--baseline", "duo@" + export, "--treatment", "=on2"}, "want NAME or A_NAME=B_NAME"},
	} {
		code, out, errOut := runCLI(t, append([]string{"run", renamed, "--store", filepath.Join(dir, "bad"), "--fsync", "interval"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.says) || strings.Contains(out, `suite "duo":`) {
			t.Errorf("run %v: exit %d, stderr %q; want 2 saying %q before anything runs", c.args, code, errOut, c.says)
		}
	}
}
