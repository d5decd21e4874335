package fleettest_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The stand-ins play services through the bus and import none: a
// service's tests that use them reach no other service's code.
func TestTheStandInsImportNoService(t *testing.T) {
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
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/factline/factline/services/") || p == "github.com/factline/factline/fleet" {
				t.Errorf("%s imports %s: the stand-ins must not know the services", name, p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
