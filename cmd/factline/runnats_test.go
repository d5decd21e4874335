package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/internal/testutil"
)

const tinySuite = "testdata/tiny/suite.yaml"

// startRun runs 'factline run' with args in the background, writing to
// out and errOut, until the returned cancel (a Ctrl-C) or its end; the
// channel gives its exit status.
func startRun(t *testing.T, out, errOut interface{ Write([]byte) (int, error) }, args ...string) (context.CancelFunc, <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	code, done := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(done)
		code <- run(ctx, append([]string{"run"}, args...), out, errOut)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, code
}

// waitForText waits until read() holds want, failing if the command exits
// first or nothing comes within a minute.
func waitForText(t *testing.T, read func() string, want string, exited <-chan int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(read(), want) {
		select {
		case c := <-exited:
			t.Fatalf("the command exited %d before it said %q: %q", c, want, read())
		case <-deadline:
			t.Fatalf("no %q within a minute: %q", want, read())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// run --nats against a fleet with a meter but no runner says, after
// --claim-grace, that no runner has taken a run and how to start one.
// Ctrl-C then says the fleet goes on and that the same command
// reattaches; and it does: once runners serve, the same command follows
// the suite to its report, having submitted nothing twice.
func TestRunNatsWithoutARunnerSaysSoAndReattaches(t *testing.T) {
	t.Parallel()
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	url := srv.ClientURL()
	startServe(t, "--services", "meter", "--nats", url)

	out, errOut := &testutil.LogBuffer{}, &testutil.LogBuffer{}
	cancel, exited := startRun(t, out, errOut, tinySuite, "--nats", url, "--claim-grace", "1s")
	waitForText(t, errOut.String, "no runner has taken a run", exited)
	cancel() // Ctrl-C
	code := <-exited
	msg := errOut.String()
	if code != 1 || !strings.Contains(msg, "factline serve --services runner --nats "+url) {
		t.Errorf("exit %d; stderr %q should say how to start a runner", code, msg)
	}
	if n := strings.Count(msg, "no runner has taken a run"); n != 1 {
		t.Errorf("the no-runner warning came %d times, want once: %q", n, msg)
	}
	if !strings.Contains(msg, "the fleet goes on") || !strings.Contains(msg, "run the same command again") {
		t.Errorf("Ctrl-C on run --nats: stderr %q should say the fleet goes on and rerunning reattaches", msg)
	}

	startServe(t, "--services", "runner,staller,decider,grader", "--nats", url)
	code, report, errText := runCLI(t, "run", tinySuite, "--nats", url, "--json")
	var r map[string]any
	if code != 0 || json.Unmarshal([]byte(report), &r) != nil {
		t.Fatalf("the rerun: exit %d, stdout %q, stderr %q", code, report, errText)
	}
	if strings.Contains(errText, "no runner has taken") {
		t.Errorf("the rerun warned about runners although they served: %q", errText)
	}
	for kind, want := range map[string]int{"suite.submitted": 1, "run.requested": 2, "run.ended": 2} {
		_, lines, _ := runCLI(t, "tail", "--nats", url, "--since", "start", "--no-follow", "--kind", kind)
		if n := strings.Count(lines, kind); n != want {
			t.Errorf("%d %s facts after a cancelled run and its rerun, want %d:\n%s", n, kind, want, lines)
		}
	}
}

// run --nats --timeout gives up, saying why nothing started (no meter
// serves at all here) and that the submitted suite stays, with the exit
// status of a suite that could not complete and the JUnit file of what
// ran so far (nothing: both attempts skipped); bad durations are usage
// errors.
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	url := srv.ClientURL()
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, _, errOut := runCLI(t, "run", tinySuite, "--nats", url, "--timeout", "2s", "--junit", junit)
	if data, err := os.ReadFile(junit); err != nil || strings.Count(string(data), `<skipped message="awaiting: not requested yet"`) != 2 {
		t.Errorf("--junit at --timeout: %v, want both attempts skipped as awaiting\n%s", err, data)
	}
	for _, want := range []string{"gave up after 2s", `no run of suite "tiny" has been requested`, "factline serve --nats " + url, "run the same command again"} {
		if code != exitIncomplete || !strings.Contains(errOut, want) {
			t.Errorf("run --timeout 2s with no fleet: exit %d, stderr %q; want %d (the suite could not complete) and %q", code, errOut, exitIncomplete, want)
		}
	}
	for _, args := range [][]string{
		{"run", tinySuite, "--nats", url, "--timeout", "-1s"},
		{"run", tinySuite, "--nats", url, "--claim-grace", "-1s"},
		{"run", tinySuite, "--timeout", "soon"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 2 {
			t.Errorf("factline %v: exit %d (%q), want 2", args, code, errOut)
		}
	}
}
