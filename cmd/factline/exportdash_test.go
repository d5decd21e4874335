package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
)

// export --out - writes the export to standard output, as import - reads
// one from standard input and decode - a message: a CI step that pipes
// its baseline into an artifact store gets the export, and the line that
// reports it on stderr. Before, it wrote a file named "-" in the working
// directory and its report line to standard output, into the pipe.
func TestExportOutDashIsStandardOutput(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	t.Cleanup(func() {
		// What the old code left in the package directory.
		if st, err := os.Stat("-"); err == nil && st.Mode().IsRegular() {
			_ = os.Remove("-")
		}
	})
	code, out, errOut := runCLI(t, "export", "fact.tiny.>", "--store", store, "--out", "-")
	if code != 0 {
		t.Fatalf("export --out -: exit %d\n%s", code, errOut)
	}
	if err := bus.CheckExport(strings.NewReader(out)); err != nil {
		t.Fatalf("export --out -: standard output is no export (%v): %.200q", err, out)
	}
	if !strings.Contains(errOut, "exported ") {
		t.Errorf("export --out -: stderr does not report the export: %q", errOut)
	}
}
