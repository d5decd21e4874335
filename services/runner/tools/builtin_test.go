package tools

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/factline/factline/cases"
)

// A built-in tool is named in three places besides its own file: Builtin
// (what the registry offers), cases.BuiltinTools (what a case file may
// list, and what a case listing none gets) and docs/tools.md (what a case
// author reads). A tool missing from the second is never offered to any
// run; one missing from the third is one nobody knows how to call.
func TestEveryBuiltinToolIsNamedWhereCasesAndDocsLookForIt(t *testing.T) {
	var names []string
	for _, tool := range Builtin() {
		names = append(names, tool.Contract().Name)
	}
	if got, want := slices.Sorted(slices.Values(cases.BuiltinTools)), slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Errorf("cases.BuiltinTools is %v, the registry's built-ins %v", got, want)
	}
	doc, err := os.ReadFile("../../../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] = true
	}
	for _, n := range names {
		if !rows[n] {
			t.Errorf("docs/tools.md has no row for the built-in tool %s in its table of tools", n)
		}
	}
}
