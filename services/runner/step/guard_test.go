package step

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The core imports only events and the standard library, and nothing of
// the standard library that does I/O or reads a clock.
func TestCoreImportsOnlyEventsAndStdlib(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if path != "github.com/factline/factline/events" && strings.Contains(first, ".") {
				t.Errorf("%s imports %s", name, path)
			}
			if slices.Contains([]string{"os", "net", "net/http", "io/fs", "time"}, path) {
				t.Errorf("%s imports %s: the core does no I/O and reads no clock", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
