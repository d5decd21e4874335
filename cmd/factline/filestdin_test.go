package main

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	store, file, data := cheatExport(t)
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

// The copy of an export read from standard input is never a file another
// process or a later run could find: it is unlinked as soon as it is made
// and read through the descriptor the command holds, so a command killed
// (SIGKILL, no deferred clean-up) leaves nothing in $TMPDIR. Before, view
// --file - kept factline-stdin-*.flx there for its whole life, and a kill
// left it behind.
func TestAStdinExportLeavesNoFileBehind(t *testing.T) {
	t.Parallel()
	data := exportOfCheat(t)
	tmp := t.TempDir()
	cmd := exec.Command(factlineBin(t), "view", "--file", "-", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdin = bytes.NewReader(data)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "http://127.0.0.1:") {
		t.Fatalf("view --file -: want its address on stdout, got %q (%v)", line, err)
	}
	// The page serves from the copy: it is still readable though unlinked.
	url := strings.Fields(strings.TrimPrefix(line, "factline view: "))[0]
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("while view --file - runs, $TMPDIR holds %v: the copy of standard input is a file anyone there can find", names(left))
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("after view --file - was killed, $TMPDIR holds %v", names(left))
	}
}

// An error about an export read from standard input names standard input,
// never the temporary copy the command reads it through: the user gave no
// such file. Before, a cut export said "read export
// /tmp/factline-stdin-241027486.flx: the file ends inside entry 602".
func TestAStdinExportIsNamedAsStandardInputInErrors(t *testing.T) {
	t.Parallel()
	data := exportOfCheat(t)
	for _, args := range [][]string{
		{"audit"},
		{"view", "--listen", "127.0.0.1:0"},
		{"whatif", "--policy", "../../examples/calibration/policies/patient.yaml"},
	} {
		code, out, errOut := factlineStdin(t, data[:len(data)/2], append(args, "--file", "-")...)
		if code == 0 || !strings.Contains(errOut, "standard input") || strings.Contains(errOut+out, "factline-stdin") || strings.Contains(errOut+out, "/proc/") {
			t.Errorf("%v --file - with a cut export: exit %d, want an error naming standard input and no temporary file:\n%s%s", args, code, out, errOut)
		}
	}
}

// exportOfCheat is an export of testdata/tiny/cheat.yaml's suite.
func exportOfCheat(t *testing.T) []byte {
	t.Helper()
	_, _, data := cheatExport(t)
	return data
}

// cheatExport runs testdata/tiny/cheat.yaml into a fresh store and
// exports it: the store, the export file and its bytes.
func cheatExport(t *testing.T) (store, file string, data []byte) {
	t.Helper()
	store = t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	file = filepath.Join(t.TempDir(), "log.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", file); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	var err error
	data, err = os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return store, file, data
}

// names lists directory entries by name.
func names(es []os.DirEntry) []string {
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}
