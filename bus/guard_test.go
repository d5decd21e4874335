package bus_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Only the bus talks NATS: outside bus/, no program code imports nats.go.
// The exceptions are cmd/ (the binaries wire connections and credentials),
// bench/ (its baselines measure raw JetStream beside factline, by design)
// and tests. Services, cores, projections and libraries reach JetStream
// through the bus, so its rules (run-wide optimistic concurrency, subject
// checks, retries) cannot be bypassed.
func TestOnlyTheBusImportsNATS(t *testing.T) {
	root := ".."
	allowed := []string{"bus", "cmd", "bench"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			for _, a := range allowed {
				if top == a {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "github.com/nats-io/nats.go" || strings.HasPrefix(p, "github.com/nats-io/nats.go/") {
				t.Errorf("%s imports %s: reach JetStream through the bus", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
