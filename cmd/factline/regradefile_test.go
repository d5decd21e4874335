package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --grading file is checked as it is read, naming the file, the line
// and the field, before any store is opened: not at the first run's
// regrade, as an index into a merged case whose file has no name.
func TestRegradeRefusesABadGradingFileNamingItsLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct{ yaml, want string }{
		{"instruments:\n  - {id: tests, kind: command, command: \"true\"}\n  - {id: answer, kind: file, path: a.txt}\n", "g.yaml:3: instruments[1]: a file instrument needs exactly one of"},
		{"instruments:\n  - {id: tests, kind: files, path: a.txt}\n", "g.yaml:2: instruments[0].kind: unknown kind \"files\""},
		{"instruments:\n  - {id: tests, kind: command, command: \"true\"}\n  - {id: tests, kind: scope, allow: [a]}\n", "g.yaml:3: instruments[1].id: duplicate instrument id"},
		{"", "g.yaml: instruments: none given"},
		{"instruments: []\n", "g.yaml: instruments: none given"},
	} {
		grading := filepath.Join(dir, "g.yaml")
		if err := os.WriteFile(grading, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCLI(t, "regrade", "tiny", "--grading", grading, "--store", filepath.Join(dir, "nostore"))
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.yaml, code, errOut, c.want)
		}
	}
}

// A grading file none of whose instruments any case of the suite has (a
// misspelt id) regrades nothing: that is an error, not "regraded 0 of 2"
// and exit 0, since regrade replaces instruments by id and adds none.
func TestRegradeRefusesAFileNoCaseHasAnInstrumentOf(t *testing.T) {
	t.Parallel()
	store, grading := tinyRegraded(t, "instruments:\n  - {id: test, kind: command, command: \"true\"}\n")
	code, _, errOut := runCLI(t, "regrade", "tiny", "--grading", grading, "--store", store)
	if code != 1 || !strings.Contains(errOut, "no case of the 2 runs regraded has an instrument test") {
		t.Errorf("exit %d, %q; want 1 and the instrument named", code, errOut)
	}
}

// An instrument the file redefines under the version its case grades it
// with would reuse that version's committed result and never run: the
// regrade the operator asked for would silently be "unchanged". It is
// refused before anything is regraded, naming the instrument, the version
// and what differs, and saying to give it a new version. The case's own
// definition, copied as it is, is no redefinition.
func TestRegradeRefusesAnInstrumentRedefinedUnderItsVersion(t *testing.T) {
	t.Parallel()
	store, grading := tinyRegraded(t, "instruments:\n  - {id: tests, kind: command, command: \"false\"}\n")
	code, out, errOut := runCLI(t, "regrade", "tiny", "--grading", grading, "--store", store, "--work-dir", t.TempDir())
	for _, want := range []string{"tests", `version "1"`, "command", "fix-sum", "new version"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, %q (out %q); want 1 and a message saying %q", code, errOut, out, want)
		}
	}
	if code, out, _ := runCLI(t, "report", "tiny", "--store", store, "--json"); code != 0 || strings.Contains(out, `"revision": 2`) {
		t.Fatalf("a refused regrade appended a revision: exit %d\n%s", code, out)
	}
	same := "instruments:\n  - {id: tests, kind: command, command: ./test.sh, tests_from_fixture: [test.sh]}\n"
	if err := os.WriteFile(grading, []byte(same), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "regrade", "tiny", "--grading", grading, "--store", store, "--work-dir", t.TempDir())
	if code != 0 || !strings.Contains(out, "fix-sum-stall-on-t1: unchanged at revision 1") {
		t.Fatalf("the case's own instrument as it is: exit %d, %s %s", code, out, errOut)
	}
}

// tinyRegraded runs the tiny suite into a fresh store and writes grading,
// the YAML of a --grading file, beside it: the store and the file's path.
func tinyRegraded(t *testing.T, grading string) (store, file string) {
	t.Helper()
	dir := t.TempDir()
	store = filepath.Join(dir, "store")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	file = filepath.Join(dir, "g.yaml")
	if err := os.WriteFile(file, []byte(grading), 0o644); err != nil {
		t.Fatal(err)
	}
	return store, file
}
