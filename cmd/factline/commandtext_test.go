package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every entry of commands.yaml belongs to a command of the tree, and
// every command of the tree has one: a command removed or renamed leaves
// no words behind that nothing shows.
func TestCommandsYAMLHasAnEntryPerCommandAndNoOther(t *testing.T) {
	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == cobra.ShellCompRequestCmd || c.Name() == cobra.ShellCompNoDescRequestCmd {
			return
		}
		paths = append(paths, strings.TrimPrefix(c.CommandPath(), "factline "))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := newRoot()
	root.InitDefaultHelpCmd()
	walk(root)
	var entries []string
	for path := range commandTexts() {
		entries = append(entries, path)
	}
	slices.Sort(paths)
	slices.Sort(entries)
	if !slices.Equal(paths, entries) {
		t.Errorf("commands.yaml has entries %q; the command tree has commands %q", entries, paths)
	}
}

// An entry's usage line starts with its command's name: cobra takes the
// name from it, so a slip would rename the command.
func TestCommandWordsRefuseAUseOfAnotherName(t *testing.T) {
	_, err := parseCommandTexts([]byte("suite pause:\n  use: resume SUITE\n  short: pause it\n"))
	if err == nil || !strings.Contains(err.Error(), `"suite pause"`) || !strings.Contains(err.Error(), `"pause"`) {
		t.Errorf("use of another name: err %v, want one naming the entry and its name", err)
	}
}

// A command without a short line would show a blank in the command list.
func TestCommandWordsRefuseAnEntryWithoutShort(t *testing.T) {
	_, err := parseCommandTexts([]byte("tail:\n  use: tail [FILTER]\n"))
	if err == nil || !strings.Contains(err.Error(), `"tail"`) || !strings.Contains(err.Error(), "short") {
		t.Errorf("no short: err %v, want one naming the entry and short", err)
	}
}

// A misspelt field or a second entry of one command is an error, not
// words silently lost.
func TestCommandWordsRefuseUnknownFieldsAndDuplicateEntries(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "tail:\n  use: tail\n  short: follow\n  exmaples: [factline tail]\n",
		"duplicate":     "tail:\n  use: tail\n  short: follow\ntail:\n  use: tail\n  short: again\n",
	} {
		if _, err := parseCommandTexts([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Examples show one command line each, indented by two spaces, as cobra
// prints Example as it is.
func TestNewCommandIndentsEachExample(t *testing.T) {
	c := newCommand("trace", noArgs)
	lines := strings.Split(c.Example, "\n")
	if len(lines) != len(commandTexts()["trace"].Examples) || len(lines) < 2 {
		t.Fatalf("trace's example has %d lines, want one per example (at least 2): %q", len(lines), c.Example)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ") {
			t.Errorf("example line %q is not indented by two spaces", l)
		}
	}
}

// The parser never panics, and what it accepts keeps its rules.
func FuzzParseCommandTexts(f *testing.F) {
	f.Add(commandsYAML)
	f.Add([]byte("tail:\n  use: tail\n  short: follow\n"))
	f.Add([]byte("a b:\n  use: c\n  short: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		texts, err := parseCommandTexts(data)
		if err != nil {
			return
		}
		for path, c := range texts {
			words := strings.Fields(path)
			if len(words) == 0 || c.Short == "" || strings.Fields(c.Use + " x")[0] != words[len(words)-1] {
				t.Errorf("accepted %q: %+v", path, c)
			}
		}
	})
}
