package suites_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/factline/factline/suites"
)

// docs/suite.md's fields table is one table that names every key of the
// suite file: a blank line once split it, and the keys after the break
// (dataset, stopping) were no longer part of it.
func TestSuiteDocFieldsTableNamesEveryKey(t *testing.T) {
	data, err := os.ReadFile("../docs/suite.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "\n| field | meaning |\n")
	if start < 0 {
		t.Fatal("docs/suite.md has no fields table")
	}
	// The table is the run of lines starting with "|" from its head on.
	var table []string
	for _, line := range strings.Split(doc[start+1:], "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		table = append(table, line)
	}
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\|")
	listed := map[string]bool{}
	for _, line := range table {
		if m := row.FindStringSubmatch(line); m != nil {
			listed[m[1]] = true
		}
	}
	ft := reflect.TypeFor[suites.File]()
	for i := range ft.NumField() {
		key, _, _ := strings.Cut(ft.Field(i).Tag.Get("yaml"), ",")
		if key != "" && key != "-" && !listed[key] {
			t.Errorf("the fields table of docs/suite.md does not name %q (it has %d rows: %v)", key, len(listed), listed)
		}
	}
}
