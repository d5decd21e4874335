package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 'factline import' of an export cut short refuses it whole and leaves
// the store empty, so the same command with the whole file then works on
// the same store: before, the part before the cut was imported and every
// later import into that store was refused.
func TestImportOfACutExportLeavesTheStoreEmpty(t *testing.T) {
	t.Parallel()
	dir, whole, data := demoExport(t)
	cut := filepath.Join(dir, "cut.flx")
	if err := os.WriteFile(cut, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "copy")
	code, out, errOut := runCLI(t, "import", "--store", fresh, "--fsync", "interval", cut)
	if code != 2 || !strings.Contains(errOut, "nothing was imported") || !strings.Contains(errOut, "the file ends inside entry") {
		t.Fatalf("import of a cut export: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "import", "--store", fresh, "--fsync", "interval", whole); code != 0 || !strings.Contains(out, "imported 15 messages") {
		t.Fatalf("the whole export into the same store: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
