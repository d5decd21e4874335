package main

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// report --by case gives one row per case and treatment, with the same
// counts the report has, as a table, JSON and CSV.
func TestReportByCase(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "report", "tiny", "--store", store, "--by", "case")
	if code != 0 || !strings.Contains(out, "case") || !strings.Contains(out, "fix-sum") || !strings.Contains(out, "read-only") {
		t.Fatalf("--by case: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if len(line) > 100 {
			t.Errorf("a line of %d columns: %q", len(line), line)
		}
	}
	if code, out, _ := runCLI(t, "report", "tiny", "--store", store, "--wide"); code != 0 || !strings.Contains(out, "harness errors") || !strings.Contains(out, "clustered SE") {
		t.Fatalf("--wide: exit %d\n%s", code, out)
	}
	// --by treatment is the default, documented as such: the same report.
	_, byDefault, _ := runCLI(t, "report", "tiny", "--store", store, "--json")
	if code, byTreatment, errOut := runCLI(t, "report", "tiny", "--store", store, "--by", "treatment", "--json"); code != 0 || byTreatment != byDefault {
		t.Fatalf("--by treatment: exit %d, %q; not the default report:\n%s\n%s", code, errOut, byTreatment, byDefault)
	}
	_, out, _ = runCLI(t, "report", "tiny", "--store", store, "--by", "case", "--json")
	var rows []struct {
		Case, Treatment        string
		Trials, Passed, Graded int
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 || rows[1].Case != "fix-sum" || rows[1].Trials != 1 || rows[1].Graded != 1 {
		t.Fatalf("--json: %v %+v", err, rows)
	}
	_, out, _ = runCLI(t, "report", "tiny", "--store", store, "--by", "case", "--csv")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 3 || recs[0][0] != "case" || recs[2][0] != "fix-sum" {
		t.Fatalf("--csv: %v %v", err, recs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "tiny", "--store", store, "--by", "trial"}, `--by "trial"`},
		{[]string{"report", "tiny", "--store", store, "--by", "case", "--svg"}, "--by case has no chart"},
		{[]string{"report", "tiny", "--store", store, "--wide", "--json"}, "--wide is the treatment table's"},
		{[]string{"report", "tiny", "--store", store, "--by", "case", "--wide"}, "--wide is the treatment table's"},
	} {
		if code, _, errOut := runCLI(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %q", c.args, code, errOut)
		}
	}
}
