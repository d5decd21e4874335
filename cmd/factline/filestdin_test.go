package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// factlineStdin runs the binary with stdin piped in (a pipe: it cannot be
// sought or read twice) and returns its exit code, stdout and stderr.
func factlineStdin(t *testing.T, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(factlineBin(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// --file - reads the export from standard input, for every command that
// reads an export --file: audit (which reads the file more than once and
// reads its blobs where they lie) says what it says of the file itself;
// replay (which reads it once, in order) prints the projection it prints
// from the file; whatif re-decides the runs it re-decides from the file.
// A cut export piped in is refused as the cut file is, nothing audited,
// and --file - beside --store is the same usage error as a path there.
// Before, "-" was opened as a file of that name: exit 2, "open -: no such
// file or directory".
func TestFileDashReadsTheExportFromStandardInput(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "log.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", file); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"audit", "--finished"},
		{"audit", "--finished", "--json"},
		{"replay", "runs"},
		{"whatif", "--policy", "../../examples/calibration/policies/patient.yaml"},
	} {
		wantCode, want, wantErr := runCLI(t, append(args, "--file", file)...)
		if wantCode != 0 {
			t.Fatalf("%v --file %s: exit %d\n%s%s", args, file, wantCode, want, wantErr)
		}
		code, out, errOut := factlineStdin(t, data, append(args, "--file", "-")...)
		if code != 0 || out != want {
			t.Errorf("%v --file -: exit %d, want 0 and what --file FILE prints:\n%s\n--- want:\n%s\n--- stderr:\n%s", args, code, out, want, errOut)
		}
	}

	code, out, errOut := factlineStdin(t, data[:len(data)/2], "audit", "--file", "-")
	if code != 1 || !strings.Contains(errOut, "nothing was audited") || strings.Contains(out, "holds") {
		t.Errorf("a cut export on standard input: exit %d, want 1 with nothing audited:\n%s%s", code, out, errOut)
	}
	code, out, errOut = factlineStdin(t, data, "audit", "--file", "-", "--store", store)
	if code != 2 || !strings.Contains(errOut, "only one") {
		t.Errorf("--file - beside --store: exit %d, want 2:\n%s%s", code, out, errOut)
	}
}
