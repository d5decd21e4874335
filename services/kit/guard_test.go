package kit_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The kit serves the services and knows none of them: it imports no
// service (nor a service's core), so services can import it without a
// cycle and without one service reaching another through it.
func TestTheKitImportsNoService(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(files, sub...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/factline/factline/services/") && !strings.HasPrefix(p, "github.com/factline/factline/services/kit") {
				t.Errorf("%s imports %s: the kit must not know the services", name, p)
			}
		}
	}
}
