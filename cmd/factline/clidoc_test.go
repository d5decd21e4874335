package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/cli.md is where a user finds what a command does: its table has a
// row for every command the binary has, and names none it lacks.
func TestTheCLIDocHasARowPerCommand(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n| command | what it does |\n")
	if !ok {
		t.Fatal("docs/cli.md has no table of commands")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+)[ `]").FindAllStringSubmatch(table, -1) {
		rows[m[1]] = true
	}
	root := newRoot()
	root.InitDefaultHelpCmd()
	have := map[string]bool{}
	for _, c := range root.Commands() {
		have[c.Name()] = true
		if !rows[c.Name()] {
			t.Errorf("docs/cli.md has no row for the command %s", c.Name())
		}
	}
	for name := range rows {
		if !have[name] {
			t.Errorf("docs/cli.md has a row for %s, which is no command", name)
		}
	}
}
