package testutil

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Module is the import path prefix of factline's own packages.
const Module = "github.com/factline/factline/"

// Imports returns the import paths of the Go file at path.
func Imports(t testing.TB, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("reading the imports of %s: %v", path, err)
	}
	var out []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatalf("%s: import %s: %v", path, imp.Path.Value, err)
		}
		out = append(out, p)
	}
	return out
}

// SourceFiles returns the Go files, tests left out, that match the glob
// patterns (relative to the test's package directory), and fails t when
// there are none: a guard that checks nothing must not pass.
func SourceFiles(t testing.TB, patterns ...string) []string {
	t.Helper()
	var out []string
	for _, pat := range patterns {
		names, err := filepath.Glob(pat)
		if err != nil {
			t.Fatalf("glob %s: %v", pat, err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
				out = append(out, name)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no Go source files match %v", patterns)
	}
	return out
}

// WalkGoFiles calls visit for every Go file below root, tests included,
// with its path relative to root in slash form and its path to open; it
// skips hidden directories, testdata and the checkout's build output (the
// top-level bin/ and tmp/ git ignores: make image copies the whole source
// into bin/deploy/src as its build context), and fails t when there are
// no Go files at all.
func WalkGoFiles(t testing.TB, root string, visit func(rel, path string)) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || isBuildOutput(root, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			n++
			visit(filepath.ToSlash(rel), path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	if n == 0 {
		t.Fatalf("no Go files below %s", root)
	}
}

// isBuildOutput reports whether rel, below root, is the checkout's build
// output directory: bin/ or tmp/ at the top of the module (.gitignore).
func isBuildOutput(root, rel string) bool {
	if rel != "bin" && rel != "tmp" {
		return false
	}
	_, err := os.Stat(filepath.Join(root, "go.mod"))
	return err == nil
}

// doesIO are the standard library packages a pure core must not import:
// they reach files, the network, processes or the clock.
var doesIO = []string{"os", "os/exec", "net", "net/http", "io/fs", "syscall", "time"}

// CheckPureCore fails t for every import of the Go source files of the
// test's package directory that is neither one of allowed nor of the
// standard library, and for every standard library package that does
// I/O or reads a clock: a pure core decides on facts alone.
func CheckPureCore(t testing.TB, allowed ...string) {
	t.Helper()
	for _, name := range SourceFiles(t, "*.go") {
		for _, p := range Imports(t, name) {
			first, _, _ := strings.Cut(p, "/")
			switch {
			case strings.Contains(first, ".") && !slices.Contains(allowed, p):
				t.Errorf("%s imports %s: a pure core imports only %v and the standard library", name, p, allowed)
			case slices.Contains(doesIO, p):
				t.Errorf("%s imports %s: a pure core does no I/O and reads no clock", name, p)
			}
		}
	}
}
