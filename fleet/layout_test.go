package fleet_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// The README's layout table is the one map of the house: every path it
// names is in the tree, and every top-level folder with Go code and every
// service has a row of its own.
func TestTheREADMELayoutIsTheTree(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(data), "\n## Layout\n")
	if !ok {
		t.Fatal("the README has no Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	rows := map[string]bool{}
	path := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(layout, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "-") || strings.TrimSpace(cells[1]) == "path" {
			continue
		}
		for _, m := range path.FindAllStringSubmatch(cells[1], -1) {
			rows[strings.TrimSuffix(m[1], "/")] = true
		}
	}
	if len(rows) == 0 {
		t.Fatal("no rows in the layout table")
	}
	for p := range rows {
		if st, err := os.Stat(filepath.Join("..", p)); err != nil || !st.IsDir() {
			t.Errorf("the layout names %s/, which is not a folder of the tree", p)
		}
	}
	want := map[string]bool{}
	testutil.WalkGoFiles(t, "..", func(rel, _ string) {
		dir := filepath.ToSlash(filepath.Dir(rel))
		parts := strings.Split(dir, "/")
		switch {
		case dir == ".":
		case parts[0] == "services" && len(parts) >= 2:
			want["services/"+parts[1]] = true
		case parts[0] == "cmd" && len(parts) >= 2:
			want["cmd/"+parts[1]] = true
		default:
			want[parts[0]] = true
		}
	})
	for p := range want {
		if !rows[p] && !(strings.HasPrefix(p, "cmd/") && strings.Contains(layout, "`"+p+"`")) {
			t.Errorf("%s/ has Go code but no row in the README's layout", p)
		}
	}
}
