package fleet_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

const module = testutil.Module

// theServices are the packages a fleet wires.
var theServices = []string{"services/decider", "services/grader", "services/meter", "services/runner", "services/staller"}

// serviceOf is the service a path of the module belongs to
// ("services/runner" for services/runner/step/…), or "".
func serviceOf(rel string) string {
	parts := strings.Split(rel, "/")
	if len(parts) < 2 || parts[0] != "services" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// Two packages every package may lean on keep away from what would tie
// them down: the vocabulary asks the host nothing (no file, network or
// process information: naming an instance after its host is the kit's
// business), so that a fact means the same wherever it is made, decoded
// or replayed; and the stand-ins of fleet/fleettest play services through
// the bus and import none, so that a service's tests that use them reach
// no other service's code.
func TestTheSharedPackagesStayNeutral(t *testing.T) {
	io := []string{"os", "os/exec", "os/user", "net", "net/http", "io/fs", "syscall"}
	checked := map[string]int{}
	testutil.WalkGoFiles(t, "..", func(rel, path string) {
		if strings.HasSuffix(rel, "_test.go") {
			return
		}
		switch filepath.Dir(rel) {
		case "events":
			checked["events"]++
			for _, p := range testutil.Imports(t, path) {
				if slices.Contains(io, p) {
					t.Errorf("%s imports %s: the vocabulary does no I/O", rel, p)
				}
			}
		case "fleet/fleettest":
			checked["fleettest"]++
			for _, p := range testutil.Imports(t, path) {
				if strings.HasPrefix(p, module+"services/") || p == module+"fleet" {
					t.Errorf("%s imports %s: the stand-ins must not know the services", rel, p)
				}
			}
		}
	})
	if checked["events"] == 0 || checked["fleettest"] == 0 {
		t.Fatalf("files checked: %v", checked)
	}
}

// No service imports another, tests included: each owns its decisions and
// talks to the others only through the bus. What they share is the kit,
// and stand-ins for the others (fleet/fleettest, which imports no service).
func TestNoServiceImportsAnotherService(t *testing.T) {
	testutil.WalkGoFiles(t, "..", func(rel, path string) {
		own := serviceOf(rel)
		if own == "" {
			return
		}
		for _, p := range testutil.Imports(t, path) {
			other := serviceOf(strings.TrimPrefix(p, module))
			if !strings.HasPrefix(p, module) || other == "" || other == own || other == "services/kit" {
				continue
			}
			t.Errorf("%s imports %s: a service reaches another only through the bus", rel, p)
		}
	})
}

// The fleet is the one place that wires services: outside it (and the
// services' own packages), no program code makes a service with its New.
// Tests may (a test of one service, a harness calling a handler
// directly); factline's commands and benchmarks start fleets.
func TestOnlyTheFleetWiresServices(t *testing.T) {
	testutil.WalkGoFiles(t, "..", func(rel, path string) {
		if strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "fleet/") || serviceOf(rel) != "" {
			return
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]string{} // local name → service package
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(theServices, strings.TrimPrefix(p, module)) {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			named[name] = p
		}
		if len(named) == 0 {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "New" {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && named[id.Name] != "" {
				t.Errorf("%s: %s.New: start the services through fleet.Start", fset.Position(sel.Pos()), id.Name)
			}
			return true
		})
	})
}
