package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A run cut off by --timeout with several runs in flight says so in one
// log line, naming how many and the first few (runner.WithHandedBackListed),
// not one "the run stops here and resumes from the log" for each run in
// flight: with --instances 16 that was 16 lines burying the line that
// matters in a CI log, the command's own "gave up after" and how to go on.
func TestATimedOutRunSaysItsRunsStopInOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Six runs of 30 turns of a second each, all in flight at once: every
	// one is mid-run at the timeout.
	suite := writeTurnsSuite(t, 6, 30, "1s")
	code, _, errOut := factline(t, "run", suite, "--store", filepath.Join(dir, "store"), "--fsync", "interval",
		"--instances", "6", "--timeout", "6s")
	if code != exitIncomplete || !strings.Contains(errOut, "gave up after 6s (--timeout)") {
		t.Fatalf("--timeout: exit %d, want %d saying it gave up\n%s", code, exitIncomplete, errOut)
	}
	var lines []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.Contains(l, "resume from the log") || strings.Contains(l, "resumes from the log") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("--timeout with 6 runs in flight: %d lines say runs stop and resume from the log, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	line := lines[0]
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "count=6") {
		t.Errorf("the line is not a warning counting the 6 runs in flight: %s", line)
	}
	if got := len(regexp.MustCompile(`ctl/look-scripted-t[1-6]`).FindAllString(line, -1)); got != 5 || !strings.Contains(line, "and 1 more") {
		t.Errorf("the line names %d runs, want the first 5 and that 1 more stops: %s", got, line)
	}
}
