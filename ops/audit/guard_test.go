package audit

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The audit is a pure function of the facts, so it runs the same on a
// live stream, an export or a test's log: it imports the vocabulary and
// the pure cores of the owners whose decisions it re-derives (the runner's
// step, the grader's grade, the meter's measure), which import no NATS and
// do no I/O themselves, and nothing of the standard library that does I/O.
// Never a service's shell: the audit must not decide with the code of the
// process it checks, only with its rules.
func TestTheAuditImportsOnlyTheVocabularyAndPureCores(t *testing.T) {
	allowed := []string{
		"github.com/factline/factline/events",
		"github.com/factline/factline/services/runner/step",
		"github.com/factline/factline/services/grader/grade",
		"github.com/factline/factline/services/meter/measure",
	}
	io := []string{"os", "os/exec", "net", "net/http", "io/fs", "syscall", "time"}
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
			first, _, _ := strings.Cut(p, "/")
			switch {
			case strings.Contains(first, ".") && !slices.Contains(allowed, p):
				t.Errorf("%s imports %s: the audit reads facts with pure cores only", name, p)
			case slices.Contains(io, p):
				t.Errorf("%s imports %s: the audit does no I/O and reads no clock", name, p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
