package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A case tagged with another split is left out of the roster, rightly;
// but a misspelt split tag (hold for holdout) drops a case the author
// meant to run, so run names the cases it left out, not just a smaller
// count.
func TestRunNamesTheCasesOfAnotherSplitItLeftOut(t *testing.T) {
	t.Parallel()
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	suite := fmt.Sprintf(`name: splitty
cases:
  - {path: %[1]s/cases/read-only/case.yaml, split: hold}
  - {path: %[1]s/cases/fix-sum/case.yaml}
treatments:
  - {path: %[1]s/treatments/stall-on.yaml}
inputs: {allow_outside: [%[1]s]}
`, demo)
	path := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(path, []byte(suite), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "run", path, "--store", filepath.Join(dir, "store"), "--fsync", "interval")
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	if all := out + errOut; !strings.Contains(all, `left out of split "dev" (tagged with another split): read-only`) {
		t.Errorf("run does not name the case it left out:\n%s", all)
	}
}
