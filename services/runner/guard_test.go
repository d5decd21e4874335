package runner_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// decisions are the types that carry a per-call decision of the runner's
// core: what to do with a call, the next step of an external effect, how a
// call left open is settled.
var decisions = []string{"Plan", "EffectStep", "Left"}

// The runner decides nothing about a call itself: only package step makes
// a per-call decision. Its decision types have no exported field, so no
// other package can fill one in; this guard refuses even an empty literal
// of them (the zero value is no decision) anywhere in the runner outside
// step, tests included, and a renamed import of step along with it.
func TestOnlyTheCoreMakesAPerCallDecision(t *testing.T) {
	t.Parallel()
	checked := 0
	testutil.WalkGoFiles(t, ".", func(rel, path string) {
		if strings.HasPrefix(rel, "step/") {
			return
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			if strings.Trim(imp.Path.Value, `"`) == "github.com/factline/factline/services/runner/step" && imp.Name != nil {
				t.Errorf("%s imports step as %s: the guard reads step's types by the name step", fset.Position(imp.Pos()), imp.Name.Name)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "step" {
				for _, name := range decisions {
					if sel.Sel.Name == name {
						t.Errorf("%s: a step.%s literal: only step decides what happens to a call", fset.Position(lit.Pos()), name)
					}
				}
			}
			return true
		})
	})
	if checked < 10 {
		t.Fatalf("only %d files checked", checked)
	}
}
