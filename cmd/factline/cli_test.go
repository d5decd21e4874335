package main

import (
	"strings"
	"testing"
)

// Every command's --help shows its usage once, on stdout, with only the
// flags that command takes: the control commands no longer share one flag
// set.
func TestHelpIsPerCommandAndPrintedOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd      string
		has, not []string
	}{
		{"cancel", []string{"--reason", "--wait", "--store", "--nats"}, []string{"--applied", "--not-applied", "--args-digest"}},
		{"steer", []string{"--wait"}, []string{"--applied", "--args-digest"}},
		{"approve", []string{"--args-digest"}, []string{"--applied", "--not-applied"}},
		{"reject", []string{"--reason"}, []string{"--applied", "--args-digest"}},
		{"resolve", []string{"--applied", "--not-applied"}, []string{"--args-digest"}},
		{"decode", []string{"--subject"}, []string{"--store", "--nats", "--creds"}},
		{"projections", nil, []string{"--store", "--json"}},
	} {
		code, out, errOut := runCLI(t, c.cmd, "--help")
		if code != 0 || errOut != "" {
			t.Errorf("%s --help: exit %d, stderr %q; want 0 and nothing on stderr", c.cmd, code, errOut)
		}
		if n := strings.Count(strings.ToLower(out), "usage:"); n != 1 || !strings.Contains(out, "factline "+c.cmd) {
			t.Errorf("%s --help prints its usage %d times, want once:\n%s", c.cmd, n, out)
		}
		for _, f := range c.has {
			if !strings.Contains(out, f+" ") {
				t.Errorf("%s --help lacks %s:\n%s", c.cmd, f, out)
			}
		}
		for _, f := range c.not {
			if strings.Contains(out, f+" ") {
				t.Errorf("%s --help lists %s, which it does not take:\n%s", c.cmd, f, out)
			}
		}
	}
}

// A mistake in how a command is called is a short message and a pointer
// to --help on stderr, with exit status 2; nothing goes to stdout.
func TestUsageErrorsAreShortAndOnStderr(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--nope"}, "unknown flag: --nope"},
		{[]string{"serve", "--instances", "many", "--store", t.TempDir()}, `invalid argument "many" for "--instances"`},
		{[]string{"run"}, "name one suite file"},
		{[]string{"run", "a.yaml", "b.yaml"}, "name one suite file"},
		{[]string{"cancel"}, "want 1 argument"},
		{[]string{"cancel", "r1", "extra"}, "want 1 argument"},
		{[]string{"steer", "r1"}, "want 2 arguments"},
		{[]string{"audit", "stray"}, `audit takes no arguments, got "stray"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `no command "frobnicate"`},
	} {
		code, out, errOut := runCLI(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || len(lines) > 6 {
			t.Errorf("factline %v: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, a short %q on stderr", c.args, code, out, errOut, c.want)
		}
		if !strings.Contains(errOut, "--help") {
			t.Errorf("factline %v: stderr %q does not point at --help", c.args, errOut)
		}
	}
	if _, _, errOut := runCLI(t, "cancel", "r1", "extra"); !strings.Contains(errOut, "see 'factline cancel --help'") {
		t.Errorf("cancel with an extra argument: %q, want the hint to name the command", errOut)
	}
}

// Bare factline is a mistake (exit 2, the command list on stderr); asking
// for help is not (exit 0, on stdout).
func TestBareFactlineAndHelp(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t)
	if code != 2 || out != "" || !strings.Contains(errOut, "cancel") || !strings.Contains(errOut, "tail") {
		t.Errorf("bare factline: exit %d, stdout %q, stderr %q; want 2 and the command list on stderr", code, out, errOut)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "cancel") || !strings.Contains(out, "replay") {
			t.Errorf("factline %v: exit %d, stderr %q, stdout %q; want 0 and the command list on stdout", args, code, errOut, out)
		}
	}
	code, out, _ = runCLI(t, "help", "tail")
	if code != 0 || !strings.Contains(out, "--no-follow") {
		t.Errorf("help tail: exit %d, %q", code, out)
	}
}
