package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/internal/testutil"
)

var doubledPrefix = testutil.DoubledPrefix

// The messages commands print when they fail say each prefix once: a
// command's name is not said again by its error, and a library's prefix
// not again by the wrapper around it.
func TestErrorMessagesRepeatNoPrefix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.msg")
	if err := os.WriteFile(junk, []byte("xx"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	edited := editedTiny(t)
	checked := 0
	for _, args := range [][]string{
		{"decode", junk},
		{"decode", "--subject", "fact.s.r.run.claimed", junk},
		{"decode", filepath.Join(dir, "missing.msg")},
		{"tail", "--nats", "nats://127.0.0.1:1", "--no-follow"},
		{"cancel", "nosuchrun", "--store", store},
		{"report", "nosuchsuite", "--store", store},
		{"run", edited, "--store", store, "--fsync", "interval"},
		{"suite", "pause", "tiny", "--store", store},
	} {
		code, _, errOut := runCLI(t, args...)
		if code == 0 || errOut == "" {
			t.Errorf("factline %v: exit %d, stderr %q; want a failure", args, code, errOut)
			continue
		}
		checked++
		if w := doubledPrefix(errOut); w != "" {
			t.Errorf("factline %v repeats %q: %s", args, w, errOut)
		}
	}
	if checked < 8 {
		t.Fatalf("only %d messages checked", checked)
	}
}

// editedTiny writes the tiny suite with one more trial: the same name,
// another roster. Its files are the demo's, named by absolute path.
func editedTiny(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/tiny/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "../../../../examples/demo", demo)
	if !strings.Contains(text, "trials: 1") {
		t.Fatalf("testdata/tiny/suite.yaml has no 'trials: 1':\n%s", data)
	}
	path := filepath.Join(t.TempDir(), "suite.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(text, "trials: 1", "trials: 2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
