package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// --log-level chooses what the command logs: a run cut off by --timeout
// with --log-level info says each run's own "stops here" line, at INFO,
// which the default (warnings and errors) leaves out. Before, no command
// had the flag, and those lines could not be had from the CLI at all.
func TestLogLevelInfoShowsEachRunsStopLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	suite := writeTurnsSuite(t, 2, 30, "1s")
	stopLine := regexp.MustCompile(`(?m)^.*level=INFO msg="the run stops here and resumes from the log".*$`)
	cases := []struct {
		level string
		want  int
	}{{"info", 2}, {"", 0}}
	// Each run waits out its --timeout on a store of its own: the two run
	// at once, so that the test waits for one timeout, not two.
	procs := make([]*proc, len(cases))
	for i, c := range cases {
		args := []string{"run", suite, "--store", filepath.Join(dir, "store-"+c.level), "--fsync", "interval", "--instances", "2", "--timeout", "5s"}
		if c.level != "" {
			args = append(args, "--log-level", c.level)
		}
		procs[i] = startFactline(t, args...)
	}
	for i, c := range cases {
		code, errOut := procs[i].wait(t, 2*time.Minute), procs[i].errOut.String()
		if code != exitIncomplete {
			t.Fatalf("--log-level %q: exit %d, want %d\n%s", c.level, code, exitIncomplete, errOut)
		}
		if got := len(stopLine.FindAllString(errOut, -1)); got != c.want {
			t.Errorf("--log-level %q: %d INFO lines saying a run stops, want %d\n%s", c.level, got, c.want, errOut)
		}
		if !strings.Contains(errOut, "level=WARN") {
			t.Errorf("--log-level %q: the warning counting the runs that stop is gone:\n%s", c.level, errOut)
		}
	}
}

// --log-level error drops warnings; a level that is none is a usage
// error naming the value and the levels there are, before anything runs.
func TestLogLevelErrorDropsWarningsAndABadLevelIsRefused(t *testing.T) {
	t.Parallel()
	env, tail := warningTail(t)
	if code, errOut := factlineEnv(t, env, tail...); code != 1 || !strings.Contains(errOut, "level=WARN") {
		t.Fatalf("default level: exit %d, want 1 with the variable's warning:\n%s", code, errOut)
	}
	if code, errOut := factlineEnv(t, env, append(tail, "--log-level", "error")...); code != 1 || strings.Contains(errOut, "level=WARN") {
		t.Errorf("--log-level error: exit %d, and a warning printed:\n%s", code, errOut)
	}
	for _, bad := range []string{"verbose", "INFO+2", ""} {
		code, errOut := factlineEnv(t, env, append(tail, "--log-level="+bad)...)
		if code != 2 || !strings.Contains(errOut, fmt.Sprintf("--log-level %q", bad)) ||
			!strings.Contains(errOut, "debug, info, warn or error") || strings.Contains(errOut, "connect") {
			t.Errorf("--log-level %q: exit %d, stderr %q; want 2 naming the value and the levels", bad, code, errOut)
		}
	}
	// Case does not matter, as slog writes the levels in capitals.
	if code, errOut := factlineEnv(t, env, append(tail, "--log-level", "ERROR")...); code != 1 || strings.Contains(errOut, "level=WARN") {
		t.Errorf("--log-level ERROR: exit %d:\n%s", code, errOut)
	}
}

// $FACTLINE_LOG_LEVEL sets the level where no --log-level is given (a
// service's environment), and is checked as the flag is.
func TestLogLevelFromTheEnvironment(t *testing.T) {
	t.Parallel()
	env, tail := warningTail(t)
	runEnv := func(level string, args ...string) (int, string) {
		return factlineEnv(t, append(append([]string(nil), env...), level), args...)
	}
	if code, errOut := runEnv("FACTLINE_LOG_LEVEL"+"=error", tail...); code != 1 || strings.Contains(errOut, "level=WARN") {
		t.Errorf("%s=error: exit %d, and a warning printed:\n%s", "FACTLINE_LOG_LEVEL", code, errOut)
	}
	if code, errOut := runEnv("FACTLINE_LOG_LEVEL"+"=error", append(tail, "--log-level", "warn")...); code != 1 || !strings.Contains(errOut, "level=WARN") {
		t.Errorf("%s=error with --log-level warn: exit %d, the flag did not win:\n%s", "FACTLINE_LOG_LEVEL", code, errOut)
	}
	if code, errOut := runEnv("FACTLINE_LOG_LEVEL"+"=loud", tail...); code != 2 || !strings.Contains(errOut, "FACTLINE_LOG_LEVEL"+`="loud"`) ||
		!strings.Contains(errOut, "debug, info, warn or error") {
		t.Errorf("%s=loud: exit %d, stderr %q; want 2 naming the variable, its value and the levels", "FACTLINE_LOG_LEVEL", code, errOut)
	}
}

// warningTail is a tail that logs one warning and fails: the environment
// it returns has $FACTLINE_SECRET_ENV name a variable that is not set
// (warned once), and no server listens at its URL (exit 1). The tests of
// the log level count that warning. (A secret file open to others is no
// longer one: that warning is printed whatever the level.)
func warningTail(t *testing.T) (env, args []string) {
	t.Helper()
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	return []string{"FACTLINE_SECRET_ENV=FACTLINE_TEST_NO_SUCH_VARIABLE"}, []string{"tail", "--no-follow", "--nats", url}
}
