package events_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The vocabulary asks the host nothing: no file, network or process
// information (naming an instance after its host and process is the
// service kit's business), so that a fact means the same wherever it is
// made, decoded or replayed.
func TestTheVocabularyDoesNoIO(t *testing.T) {
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
			if slices.Contains([]string{"os", "os/exec", "os/user", "net", "net/http", "io/fs", "syscall"}, p) {
				t.Errorf("%s imports %s: the vocabulary does no I/O", name, p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
