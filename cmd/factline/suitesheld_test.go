package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A suite name mistyped, or looked for in the wrong store, was answered
// "never submitted" and nothing more: the user had to replay the whole
// log to learn what it holds. Every command that reads one suite by name
// now says which suites the log holds.
func TestASuiteNotInTheLogIsAnsweredWithTheSuitesItHolds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	export := filepath.Join(dir, "tiny.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", export); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, errOut)
	}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"report", []string{"report", "tinny", "--store", store}, "the log holds one suite: tiny"},
		{"retry", []string{"retry", "tinny", "--store", store}, "the log holds one suite: tiny"},
		{"suite pause", []string{"suite", "pause", "tinny", "--store", store}, "the log holds one suite: tiny"},
		{"compare, a store", []string{"compare", "tinny@" + store, "tiny@" + store}, "holds one suite: tiny"},
		{"compare, an export", []string{"compare", "tinny@" + export, "tiny@" + store}, "holds one suite: tiny"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != 1 || !strings.Contains(errOut, "tinny") || !strings.Contains(errOut, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", c.name, code, errOut, c.says)
		}
	}
}

// The list names every suite up to ten, and past that the newest ten and
// where to find the rest.
func TestSuitesHeldNamesTheNewestTen(t *testing.T) {
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("s%02d", i))
	}
	for _, c := range []struct {
		suites []string
		want   string
	}{
		{nil, "the log holds no suite"},
		{[]string{"a"}, "the log holds one suite: a"},
		{[]string{"a", "b"}, "the log holds 2 suites: a, b"},
		{many, "the log holds 12 suites, the newest 10: s02, s03, s04, s05, s06, s07, s08, s09, s10, s11 ('factline replay suites' lists them all)"},
	} {
		if got := suitesHeld("the log", c.suites); got != c.want {
			t.Errorf("suitesHeld(%v) = %q, want %q", c.suites, got, c.want)
		}
	}
}
