package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/lab/whatif"
)

// whatif on the calibration suite: the recorded policy decides every run
// as recorded, a candidate with no retries cuts recoveries short, and the
// report comes as text, JSON and an SVG curve, from a store and from an
// export file with its suite file.
func TestWhatifReplaysTheCalibrationSuite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if code, _, errOut := runCLI(t, "run", "../../examples/calibration/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	policy := filepath.Join(dir, "hasty.yaml")
	if err := os.WriteFile(policy, []byte("stall:\n  repair_budget: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "curve.svg")
	code, out, errOut := runCLI(t, "whatif", "--store", store, "--policy", policy, "--svg", svg)
	if code != 0 {
		t.Fatalf("whatif exited %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[1], "recorded  ") || !strings.Contains(lines[1], " 14 ") || !strings.HasPrefix(lines[2], "hasty ") {
		t.Fatalf("want the recorded line then hasty's:\n%s", out)
	}
	if !strings.Contains(out, "hasty: calibration/poll-4-stall-off-t1 stops at turn 3") || !strings.Contains(out, "a false stop") {
		t.Fatalf("want poll-4 cut short at its first armed turn:\n%s", out)
	}
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), "<svg") {
		t.Fatalf("svg: %v", err)
	}

	code, out, errOut = runCLI(t, "whatif", "calibration", "--store", store, "--policy", policy, "--json")
	if code != 0 {
		t.Fatalf("whatif --json exited %d: %s", code, errOut)
	}
	var rep struct {
		Runs       int
		Candidates []struct {
			FalseStops int `json:"false_stops"`
			TrueStalls int `json:"true_stalls"`
			Same       int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if rep.Runs != 14 || rep.Candidates[0].Same != 14 || rep.Candidates[1].FalseStops != 9 || rep.Candidates[1].TrueStalls != 3 {
		t.Fatalf("report %+v, want 14 runs, the recording replayed, hasty with 9 false stops and 3 true stalls", rep)
	}

	export := filepath.Join(dir, "cal.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", export); code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	code, out2, errOut := runCLI(t, "whatif", "--file", export, "--suite", "../../examples/calibration/suite.yaml", "--policy", policy, "--json")
	if code != 0 || out2 != out {
		t.Fatalf("from the export (exit %d, %s): the report differs from the store's", code, errOut)
	}
	// The export holds the cases and treatments the runs ran under: it
	// needs no suite file.
	code, out3, errOut := runCLI(t, "whatif", "--file", export, "--policy", policy, "--json")
	if code != 0 || out3 != out {
		t.Fatalf("from the export alone (exit %d, %s): the report differs from the store's", code, errOut)
	}
}

func TestWhatifRefusesWhatItCannotReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("stall:\n  repair_budget: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := "../../" + whatif.ExamplePolicy
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"whatif", "--file", "../../bus/testdata/export-v2.flx", "--policy", good}, 2, "--file needs --suite: an export written without blobs"},
		{[]string{"whatif", "--file", "x.flx", "--policy", good}, 2, "x.flx: no such file"},
		{[]string{"whatif", "--suite", "s.yaml", "--store", dir, "--policy", good}, 2, "--suite goes with --file"},
		{[]string{"whatif", "--policy", bad, "--store", dir}, 2, "bad.yaml: stall.repair_budget: cannot be negative"},
		{[]string{"whatif", "--store", filepath.Join(dir, "none"), "--policy", good}, 1, "none"},
		{[]string{"whatif", "--store", dir}, 2, "needs at least one --policy FILE"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d saying %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// Without --policy there is nothing to compare with the recording: a
// usage error naming the flag, what the file holds and a file the
// repository ships, which parses.
func TestWhatifWithoutAPolicySaysWhatToPass(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "whatif", "--store", t.TempDir())
	if code != 2 || out != "" {
		t.Fatalf("whatif without --policy: exit %d, stdout %q; want a usage error", code, out)
	}
	for _, want := range []string{"--policy FILE", "stall:", "name:", whatif.ExamplePolicy} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message does not say %q:\n%s", want, errOut)
		}
	}
	data, err := os.ReadFile("../../" + whatif.ExamplePolicy)
	if err != nil {
		t.Fatalf("the example the message names: %v", err)
	}
	if _, err := whatif.ParseCandidate(whatif.ExamplePolicy, data); err != nil {
		t.Fatalf("the example the message names does not parse: %v", err)
	}
}
