package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner"
)

// An agent command the attempt's user cannot run is found before the
// agent starts: the run ends errored, with a reason naming the command
// and why (a directory on its path it may not search, a file it may not
// execute, a name not in PATH), and no turn is started.
func TestExternalAgentTheUserCannotRunEndsNamingIt(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only then does the agent run as a uid of its own that a 0700 directory shuts out")
	}
	e, _ := startWith(t)
	dir := agentDir(t, "factline-closed-")
	closed := filepath.Join(dir, "closed")
	must(t, os.Mkdir(closed, 0o700))
	hidden := filepath.Join(closed, "agent")
	must(t, os.WriteFile(hidden, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	plain := filepath.Join(dir, "plain")
	must(t, os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644))
	for i, c := range []struct{ cmd, want string }{
		{hidden, hidden + ": no such file, or a directory on its path the attempt's user may not search"},
		{plain, plain + ": not executable by the attempt's user"},
		{"no-such-agent-anywhere", "no-such-agent-anywhere: not found in PATH"},
	} {
		log, end := e.runAgent(fixtureCase(t, "{steps: 4}"), agentTreatment(t, fixScript, c.cmd, "{{.Instruction}}"), "ext-exec-"+string(rune('a'+i)))
		if end.Status != events.RunErrored || !strings.Contains(end.Reason, c.want) {
			t.Errorf("%s: ended %s (%s), want errored naming %q", c.cmd, end.Status, end.Reason, c.want)
		}
		for _, f := range log.Facts() {
			if _, ok := f.Body.(events.TurnStarted); ok {
				t.Errorf("%s: a turn started", c.cmd)
			}
		}
	}
}

// A script agent whose #! interpreter the attempt's user cannot run (a
// python in a venv below root's 0700 home, a name env does not find in
// the attempt's PATH) is found before it starts, as its command would be:
// the run ends errored naming the script and its interpreter, no turn
// started. It used to pass the check (the script itself is reachable),
// exit 126 and end incomplete, graded failed as if the agent had failed.
// A script whose interpreter the user can run is not refused.
func TestExternalAgentScriptWhoseInterpreterTheUserCannotRunEndsNamingIt(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only then does the agent run as a uid of its own that a 0700 directory shuts out")
	}
	e, _ := startWith(t)
	dir := agentDir(t, "factline-interp-")
	closed := filepath.Join(dir, "closed")
	must(t, os.Mkdir(closed, 0o700))
	python := filepath.Join(closed, "python3")
	must(t, os.WriteFile(python, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	plain := filepath.Join(dir, "plain-interpreter")
	must(t, os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644))
	script := func(name, shebang string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(shebang+"\nexit 0\n"), 0o755))
		return p
	}
	venv := script("venv-agent", "#!"+python+" -u")
	viaEnv := script("env-agent", "#!/usr/bin/env -S no-such-interpreter-anywhere -u")
	notExec := script("plain-agent", "#!"+plain)
	fine := script("fine-agent", "#!/usr/bin/env bash")
	for i, c := range []struct{ cmd, want string }{
		{venv, venv + ": its interpreter " + python + " (#! line): no such file, or a directory on its path the attempt's user may not search"},
		{viaEnv, viaEnv + ": its interpreter no-such-interpreter-anywhere (#! line, through env): not found in PATH"},
		{notExec, notExec + ": its interpreter " + plain + " (#! line): not executable by the attempt's user"},
	} {
		log, end := e.runAgent(fixtureCase(t, "{steps: 4}"), agentTreatment(t, fixScript, c.cmd, "{{.Instruction}}"), "ext-interp-"+string(rune('a'+i)))
		if end.Status != events.RunErrored || !strings.Contains(end.Reason, c.want) {
			t.Errorf("%s: ended %s (%s), want errored naming %q", c.cmd, end.Status, end.Reason, c.want)
		}
		for _, f := range log.Facts() {
			if _, ok := f.Body.(events.TurnStarted); ok {
				t.Errorf("%s: a turn started", c.cmd)
			}
		}
	}
	// It exits at once without a call: the agent's own ending, not the
	// harness's.
	_, end := e.runAgent(fixtureCase(t, "{steps: 4}"), agentTreatment(t, fixScript, fine, "{{.Instruction}}"), "ext-interp-fine")
	if end.Status != events.RunIncomplete || end.Reason != runner.ReasonAgentExited {
		t.Errorf("%s: ended %s (%s), want incomplete %s: its interpreter is bash, which the user may run", fine, end.Status, end.Reason, runner.ReasonAgentExited)
	}
}

// An agent (or its #! interpreter) below /tmp, where a new user's scratch
// directory usually is, exists for the runner but not for the attempt,
// whose /tmp is a directory of its own: the reason says so, and where to
// put the agent instead, rather than only "no such file" for a file the
// user can see.
func TestExternalAgentBelowTmpEndsSayingTmpIsPrivate(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only then does the attempt get a /tmp of its own")
	}
	e, _ := startWith(t)
	scratch, err := os.MkdirTemp("/tmp", "factline-scratch-")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(scratch) })
	must(t, os.Chmod(scratch, 0o755))
	inTmp := filepath.Join(scratch, "agent.py")
	must(t, os.WriteFile(inTmp, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	python := filepath.Join(scratch, "venv", "bin", "python3")
	must(t, os.MkdirAll(filepath.Dir(python), 0o755))
	must(t, os.WriteFile(python, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	dir := agentDir(t, "factline-venv-")
	venvAgent := filepath.Join(dir, "agent.py")
	must(t, os.WriteFile(venvAgent, []byte("#!"+python+"\nexit 0\n"), 0o755))
	const hint = "/tmp is private to each attempt"
	for i, c := range []struct{ cmd, want string }{
		{inTmp, inTmp + ": no such file"},
		{venvAgent, venvAgent + ": its interpreter " + python + " (#! line): no such file"},
	} {
		_, end := e.runAgent(fixtureCase(t, "{steps: 4}"), agentTreatment(t, fixScript, c.cmd, "{{.Instruction}}"), "ext-tmp-"+string(rune('a'+i)))
		if end.Status != events.RunErrored || !strings.Contains(end.Reason, c.want) || !strings.Contains(end.Reason, hint) {
			t.Errorf("%s: ended %s (%s), want errored naming %q and saying %q", c.cmd, end.Status, end.Reason, c.want, hint)
		}
	}
}
