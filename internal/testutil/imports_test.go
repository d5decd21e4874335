package testutil

import (
	"slices"
	"testing"
)

// make image copies the source into bin/deploy/src; a guard walking the
// checkout must not read that copy as the project's own code (it failed
// three guards after a deploy test had run in the same checkout).
func TestWalkGoFilesSkipsTheBuildOutput(t *testing.T) {
	root := t.TempDir()
	WriteTree(t, root, map[string]string{
		"go.mod":                          "module example.com/m\n",
		"bus/bus.go":                      "package bus\n",
		"bin/deploy/src/bus/bus.go":       "package bus\n",
		"tmp/x.go":                        "package x\n",
		"tools/bin/tool.go":               "package bin\n",
		"bus/testdata/skipped/skipped.go": "package skipped\n",
	})
	var got []string
	WalkGoFiles(t, root, func(rel, _ string) { got = append(got, rel) })
	slices.Sort(got)
	if want := []string{"bus/bus.go", "tools/bin/tool.go"}; !slices.Equal(got, want) {
		t.Fatalf("visited %v, want %v", got, want)
	}
}
