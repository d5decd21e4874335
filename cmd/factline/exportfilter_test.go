package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// export takes its filter as FILTER or as --filter; given both, one of
// them was silently dropped (the argument won), so an export of another
// suite than the one the flag named went out without a word.
func TestExportRefusesAFilterGivenTwice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "export", "fact.a.>", "--filter", "fact.b.>", "--store", filepath.Join(dir, "store"))
	if code != 2 || !strings.Contains(errOut, `"fact.a.>"`) || !strings.Contains(errOut, `--filter "fact.b.>"`) {
		t.Errorf("exit %d, %q; want 2 naming both filters", code, errOut)
	}
}
