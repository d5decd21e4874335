package step

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
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

// A per-call decision is made here and only here: the types that carry one
// have no exported field, so no other package can make one but their zero
// value, which is no decision (the runner's guard test refuses a literal
// of them outside this package, and the runner refuses a zero one).
func TestDecisionsAreMadeOnlyHere(t *testing.T) {
	for _, v := range []any{Plan{}, EffectStep{}, Left{}} {
		typ := reflect.TypeOf(v)
		if typ.NumField() == 0 {
			t.Errorf("%s has no fields", typ)
		}
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				t.Errorf("%s.%s is exported: another package could make a %s", typ, f.Name, typ)
			}
		}
	}
	if (Plan{}).Act() != 0 || (EffectStep{}).Act() != 0 || (Left{}).Act() != 0 {
		t.Error("a zero decision names an act")
	}
}
