package main

import (
	"strings"
	"testing"
)

// An edited suite run again under its name on the same store is refused
// (one name holds one roster), saying what differs and what to do:
// rename the suite or use another store. Nothing of it is submitted.
func TestAnEditedSuiteUnderItsOldNameSaysToRenameItOrUseAnotherStore(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	code, _, errOut := runCLI(t, "run", editedTiny(t), "--store", store, "--fsync", "interval")
	if code != 1 {
		t.Fatalf("the edited suite: exit %d, %s; want 1", code, errOut)
	}
	for _, want := range []string{`suite "tiny"`, "trials: 1 in the log, 2 in the file", "rename the suite", "another store"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, errOut)
		}
	}
	// The store still holds the first roster alone.
	if code, out, _ := runCLI(t, "report", "tiny", "--store", store, "--json"); code != 0 || !strings.Contains(out, `"trials": 1`) {
		t.Fatalf("the store's report after the refusal: %d\n%s", code, out)
	}
}
