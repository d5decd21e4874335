package runner_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"

	"github.com/factline/factline/internal/testutil"
)

// buildAgent builds the test's external agent (miniagent, an agent of
// factline's tests, not the example's npm agent) where the attempt's user
// (a fresh uid) can run it: not below /tmp or /var/tmp, which the
// attempt's mount namespace covers with tmpfs of its own, nor in the
// package's directory, which on a fresh machine is below root's home
// (0700: the uid could not reach it), but in /usr/local/lib, which every
// uid may search. It is built once for the test binary (every test only
// runs it; linking it anew took seconds a test) and removed by TestMain.
func buildAgent(t *testing.T) string {
	t.Helper()
	agent.once.Do(func() {
		dir, err := os.MkdirTemp("/usr/local/lib", "factline-miniagent-")
		if err != nil {
			agent.err = err
			return
		}
		agent.dir = dir
		if err := os.Chmod(dir, 0o755); err != nil {
			agent.err = err
			return
		}
		bin := filepath.Join(dir, "miniagent")
		if out, err := testutil.GoBuild(bin, "./agentproxy/miniagent").CombinedOutput(); err != nil {
			agent.err = fmt.Errorf("%w\n%s", err, out)
			return
		}
		agent.bin = bin
	})
	if agent.err != nil {
		t.Fatalf("build miniagent: %v", agent.err)
	}
	return agent.bin
}

// agent is the miniagent buildAgent built, shared by the tests.
var agent struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// removeAgent removes what buildAgent built, once every test has run.
func removeAgent() {
	if agent.dir != "" {
		_ = os.RemoveAll(agent.dir)
	}
}

// agentTreatment runs argv (templates over cases.AgentVars) under the
// scripted model playing script.
func agentTreatment(t *testing.T, script string, argv ...string) *cases.Treatment {
	t.Helper()
	tr := treatment(t, script)
	tr.ID = "external"
	tr.Agent = &cases.Agent{Command: argv, Version: []string{cases.AgentNoVersion}}
	return tr
}

// runAgent publishes c under tr, requests run and waits for its end.
func (e *env) runAgent(c *cases.Case, tr *cases.Treatment, run string) (bus.RunLog, events.RunEnded) {
	e.t.Helper()
	p, err := fleettest.Publish(e.ctx, e.b, c, tr)
	must(e.t, err)
	must(e.t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", run)
	must(e.t, err)
	return log, end
}

const fixScript = `turns:
  - calls:
      - {name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {name: run_command, args: {command: ./check.sh}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 5}
    reserve: 10
  - text: answer.txt holds 4 and the check passes.
    usage: {input_tokens: 140, output_tokens: 9, cost: 5}
    reserve: 10
`

// Every call an external agent makes is a recorded turn: turn.started
// with the digest of the request stored as a blob (which holds the
// agent's own messages and tools), model.replied with the usage and
// turn.completed; the agent's tools ran in the workspace, and the sealed
// candidate is what it left.
func TestExternalAgentCallsAreRecordedTurns(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	c := fixtureCase(t, "{steps: 10}")
	log, end := e.runAgent(c, agentTreatment(t, fixScript, bin, "--stream", "{{.Instruction}}"), "ext-1")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done: the stand-in decider accepts the agent's final answer", end.Status, end.Reason)
	}
	var started []events.TurnStarted
	var replied []events.ModelReplied
	completed := 0
	var sealed *events.CandidateSealed
	for _, f := range log.Facts() {
		switch b := f.Body.(type) {
		case events.TurnStarted:
			started = append(started, b)
		case events.ModelReplied:
			replied = append(replied, b)
		case events.TurnCompleted:
			completed++
		case events.CandidateSealed:
			sealed = &b
		}
	}
	if len(started) != 2 || len(replied) != 2 || completed != 2 {
		t.Fatalf("turns started %d, replied %d, completed %d; want 2 each", len(started), len(replied), completed)
	}
	if replied[0].Usage == nil || replied[0].Usage.InputTokens != 100 || len(replied[0].Calls) != 2 || replied[1].Text == "" {
		t.Fatalf("replies not recorded as the model gave them: %+v", replied)
	}
	body, err := e.b.Blobs().Get(e.ctx, started[1].ContextDigest)
	must(t, err)
	for _, want := range []string{"You are miniagent", "Make ./check.sh pass", "wrote answer.txt", `"run_command"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("turn 2's stored request lacks %q: %s", want, body)
		}
	}
	if end.Spent.Cost == nil || *end.Spent.Cost != 10 {
		t.Errorf("spent %+v, want the two calls' cost 10", end.Spent)
	}
	if sealed == nil || sealed.SnapshotDigest == c.FixtureDigest {
		t.Fatalf("the candidate %+v is not the workspace the agent changed", sealed)
	}
}

// A call past the run's budget is refused with OpenAI's
// insufficient_quota error and the run ends exhausted: no turn is started
// for it, and the agent is ended.
func TestExternalAgentPastBudgetIsExhausted(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	c := fixtureCase(t, "{steps: 1}")
	log, end := e.runAgent(c, agentTreatment(t, fixScript, bin, "{{.Instruction}}"), "ext-budget")
	if end.Status != events.RunExhausted || end.Reason != "step_limit" {
		t.Fatalf("ended %s (%s), want exhausted step_limit", end.Status, end.Reason)
	}
	n := 0
	for _, f := range log.Facts() {
		if _, ok := f.Body.(events.TurnStarted); ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d turns started, want 1: the refused call starts none", n)
	}
}

// A cancel while the agent's call waits for the model ends the run
// cancelled and the agent's process with it.
func TestExternalAgentCancelMidCallEndsTheProcess(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	c := fixtureCase(t, "{steps: 10}")
	slow := "turns:\n  - text: thinking\n    delay: 60s\n"
	// The agent writes its pid into its workspace: the one place of the
	// attempt's it may write that the test can find.
	tr := agentTreatment(t, slow, bin, "--pidfile", "{{.Workspace}}/agent.pid", "{{.Instruction}}")
	p, err := fleettest.Publish(e.ctx, e.b, c, tr)
	must(t, err)
	must(t, fleettest.Request(e.ctx, e.b, "suite", "ext-cancel", p, 1))
	must(t, fleettest.Await(e.ctx, e.b, "suite", "ext-cancel", func(l bus.RunLog) bool {
		for _, f := range l.Facts() {
			if _, ok := f.Body.(events.TurnStarted); ok {
				return true
			}
		}
		return false
	}))
	pid := agentPID(t, e)
	must(t, e.b.Controls().Send(e.ctx, "suite", "ext-cancel", events.Control{Signal: events.SignalCancel, Reason: "enough"}))
	_, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", "ext-cancel")
	must(t, err)
	if end.Status != events.RunCancelled {
		t.Fatalf("ended %s (%s), want cancelled", end.Status, end.Reason)
	}
	// The run ends only after the sandbox killed the agent's session.
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("the agent (pid %d) outlived the cancel: kill 0 says %v", pid, err)
	}
}

// waitFor polls cond for up to d (a bounded loop).
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A runner process killed while its external agent waits on a call leaves
// an attempt no runner can resume: the agent's own state died with it.
// The runner that takes the run over ends it errored as interrupted,
// keeping every fact the dead runner committed (its claim, the turn it
// started); a retry of the run is a new attempt that runs to its end.
func TestExternalAgentRunnerKilledIsInterruptedThenRetried(t *testing.T) {
	t.Parallel()
	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx) }()
	bin := buildAgent(t)
	p, err := fleettest.Publish(ctx, b, fixtureCase(t, "{steps: 10}"), agentTreatment(t, fixScript, bin, "{{.Instruction}}"))
	must(t, err)
	// The child runner commits its claim, then turn.started for the
	// agent's first call, and dies by SIGKILL right after.
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "FACTLINE_TEST_RUNNER="+srv.ClientURL(),
		"FACTLINE_TEST_CRASH_AT=2", "FACTLINE_TEST_WORKDIR="+reachableDir(t))
	must(t, child.Start())
	res := takeover(t, ctx, b, "ext-crash", p, child)
	if res.end.Status != events.RunErrored || res.end.Reason != runner.ReasonAgentInterrupted {
		t.Fatalf("ended %s (%s), want errored as interrupted", res.end.Status, res.end.Reason)
	}
	var claims, started int
	for _, f := range res.log.Facts() {
		switch f.Body.(type) {
		case events.RunClaimed:
			claims++
		case events.TurnStarted:
			started++
			if f.Producer.Instance != "doomed" {
				t.Fatalf("a turn was started by %s: the interrupted attempt was resumed", f.Producer.Instance)
			}
		}
	}
	if claims != 2 || started != 1 {
		t.Fatalf("%d claims and %d turns started, want the dead runner's claim and turn kept and the heir's claim", claims, started)
	}

	// factline retry's request: a new run naming the one it retries.
	retry := "ext-crash-retry1"
	_, err = b.Commit(ctx, nil, "suite", retry, func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: "suite", Run: retry, TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerMeter, Instance: "test"}},
			events.RunRequested{Case: p.Case.ID, CaseDigest: p.CaseDigest, Treatment: p.Treatment.ID,
				TreatmentDigest: p.TreatmentDigest, Trial: 1, RetryOf: "ext-crash", Budget: events.Budget{Steps: 10}})
		return []bus.Pending{{Fact: f, MsgID: events.MessageID(retry, events.KindRunRequested)}}, err
	})
	must(t, err)
	svc, err := runner.New(b, runner.WithWorkDir(reachableDir(t)), kit.WithInstance("retrier"))
	must(t, err)
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = svc.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", retry)
	must(t, err)
	turns := 0
	for _, f := range log.Facts() {
		if _, ok := f.Body.(events.TurnCompleted); ok {
			turns++
		}
	}
	if end.Status != events.RunDone || turns != 2 {
		t.Fatalf("the retry ended %s (%s) after %d turns, want done after 2", end.Status, end.Reason, turns)
	}
}

// The wall-time budget bounds the agent: a call that outlasts it ends the
// run exhausted (wall_time_limit) and the agent's process with it.
func TestExternalAgentPastTheWallBudgetIsEnded(t *testing.T) {
	// Serial: its wall budget is seconds, which tests running beside it
	// on a loaded -race run could use up before the step it is about.
	e, _ := startWith(t)
	bin := buildAgent(t)
	c := fixtureCase(t, "{steps: 10, wall: 6s}")
	slow := "turns:\n  - text: thinking\n    delay: 60s\n"
	p, err := fleettest.Publish(e.ctx, e.b, c, agentTreatment(t, slow, bin, "--pidfile", "{{.Workspace}}/agent.pid", "{{.Instruction}}"))
	must(t, err)
	must(t, fleettest.Request(e.ctx, e.b, "suite", "ext-wall", p, 1))
	pid := agentPID(t, e)
	_, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", "ext-wall")
	must(t, err)
	if end.Status != events.RunExhausted || end.Reason != runner.ReasonWallLimit {
		t.Fatalf("ended %s (%s), want exhausted %s", end.Status, end.Reason, runner.ReasonWallLimit)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("the agent (pid %d) outlived the wall budget: kill 0 says %v", pid, err)
	}
}

// agentPID waits for the pid file the agent writes in its workspace and
// reads it; the agent is then alive.
func agentPID(t *testing.T, e *env) int {
	t.Helper()
	var data []byte
	if !waitFor(30*time.Second, func() bool {
		found, _ := filepath.Glob(filepath.Join(e.work, "*", "ws", "agent.pid"))
		if len(found) == 1 {
			data, _ = os.ReadFile(found[0])
		}
		return len(data) > 0
	}) {
		t.Fatal("the agent wrote no pid file in its workspace")
	}
	pid, err := strconv.Atoi(string(data))
	must(t, err)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the agent (pid %d) is not running: %v", pid, err)
	}
	return pid
}

// A stop decision ends the agent: once the decider finishes the run on
// the agent's answer, the agent's next call is refused, starts no turn,
// and the agent's process is ended; the run ends as decided.
func TestExternalAgentStopDecisionEndsTheAgent(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	c := fixtureCase(t, "{steps: 10}")
	// The delay keeps the agent alive while the test reads its pid.
	script := "turns:\n  - text: answer.txt is fine as it is.\n    delay: 2s\n  - text: still here\n  - text: still here\n"
	p, err := fleettest.Publish(e.ctx, e.b, c, agentTreatment(t, script, bin, "--keep-going", "--pidfile", "{{.Workspace}}/agent.pid", "{{.Instruction}}"))
	must(t, err)
	must(t, fleettest.Request(e.ctx, e.b, "suite", "ext-stop", p, 1))
	pid := agentPID(t, e)
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", "ext-stop")
	must(t, err)
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done as the stand-in decider decided", end.Status, end.Reason)
	}
	started := 0
	for _, f := range log.Facts() {
		if _, ok := f.Body.(events.TurnStarted); ok {
			started++
		}
	}
	if started != 1 {
		t.Fatalf("%d turns started, want 1: the call after the finish is refused", started)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("the agent (pid %d) outlived the stop decision: kill 0 says %v", pid, err)
	}
}

// An agent that answers and then does not exit (it waits on a child, a
// socket, a telemetry flush) is ended by the stop decision on its answer,
// not left running until the wall-time budget passes, which would end a
// run the decider had already finished as exhausted instead (and, without
// a wall budget, never end it). Found by a user's own agent that slept
// after its last answer: its run, decided done, ended wall_time_limit.
func TestExternalAgentThatLingersAfterItsAnswerEndsAsDecided(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	// The wall budget is far longer than the run needs: the old runner
	// waited it out and ended the run exhausted.
	c := fixtureCase(t, "{steps: 10, wall: 90s}")
	// The delay keeps the agent alive while the test reads its pid: once
	// answered, it is ended when runner.FinishGrace has passed after the
	// finish was decided.
	script := "turns:\n  - text: answer.txt is fine as it is.\n    delay: 2s\n"
	p, err := fleettest.Publish(e.ctx, e.b, c, agentTreatment(t, script, bin, "--linger", "10m", "--pidfile", "{{.Workspace}}/agent.pid", "{{.Instruction}}"))
	must(t, err)
	must(t, fleettest.Request(e.ctx, e.b, "suite", "ext-linger", p, 1))
	pid := agentPID(t, e)
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", "ext-linger")
	must(t, err)
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done as the stand-in decider decided on the agent's answer", end.Status, end.Reason)
	}
	decided := 0
	for _, f := range log.Facts() {
		if _, ok := f.Body.(events.StopDecided); ok {
			decided++
		}
	}
	if decided != 1 {
		t.Fatalf("%d stop decisions, want the one on the agent's answer", decided)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("the agent (pid %d) outlived the stop decision: kill 0 says %v", pid, err)
	}
}

// An agent that does something with its final answer once it has read
// it (writes it where the grader reads it, as an eval team's agent does
// with a model's final text) gets to do it: the stop decider's finish on
// that answer used to end the agent at once, before it had even read the
// answer, so the candidate never held what it wrote and the grade failed.
// Found by a Vercel AI SDK agent that wrote its final text to a file:
// five runs of five sealed the fixture unchanged.
func TestExternalAgentFinishesWhatItDoesWithItsAnswer(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	bin := buildAgent(t)
	c := fixtureCase(t, "{steps: 10, wall: 90s}")
	script := "turns:\n  - text: \"4\"\n"
	log, end := e.runAgent(c, agentTreatment(t, script, bin, "--linger", "500ms", "--answer-file", "answer.txt", "{{.Instruction}}"), "ext-answer-file")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done as the stand-in decider decided on the agent's answer", end.Status, end.Reason)
	}
	var sealed *events.CandidateSealed
	for _, f := range log.Facts() {
		if b, ok := f.Body.(events.CandidateSealed); ok {
			sealed = &b
		}
	}
	if sealed == nil || sealed.SnapshotDigest == c.FixtureDigest {
		t.Fatalf("the candidate %+v is the fixture: the agent was ended before it wrote its answer to answer.txt", sealed)
	}
}

// An agent that exits leaving a process of its own running with the
// agent's output still open (a dev server, a language server, a build
// started with &) has ended: the run ends agent_exited and what it left is
// killed, rather than the runner waiting for the output to close until the
// wall-time budget passes (which ended the run exhausted) or, without one,
// for good. (That the sandbox kills what a command left is its own
// tests'.) Found by a user's agent that started `sleep` in the
// background and exited 0.
func TestExternalAgentThatExitsLeavingAChildHoldingItsOutputHasExited(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	dir := agentDir(t, "factline-leaver-")
	agent := filepath.Join(dir, "agent")
	must(t, os.WriteFile(agent, []byte("#!/bin/bash\nsleep 600 &\necho started a child\nexit 0\n"), 0o755))
	// The wall budget is far longer than the run needs: the old runner
	// waited it out and ended the run exhausted.
	c := fixtureCase(t, "{steps: 4, wall: 90s}")
	_, end := e.runAgent(c, agentTreatment(t, fixScript, agent, "{{.Instruction}}"), "ext-leaver")
	if end.Status != events.RunIncomplete || end.Reason != runner.ReasonAgentExited {
		t.Fatalf("ended %s (%s), want incomplete %s: the agent exited by itself", end.Status, end.Reason, runner.ReasonAgentExited)
	}
}

// What an agent that failed printed last, the traceback it died with, is
// on the runner's log line for it, though the agent printed far more than
// is kept before it: the runner keeps the end of the agent's output, not
// its start (which held only progress lines).
func TestExternalAgentThatFailsAfterMuchOutputLogsItsLastWords(t *testing.T) {
	t.Parallel()
	e, logs := startWith(t)
	dir := agentDir(t, "factline-talker-")
	agent := filepath.Join(dir, "agent")
	must(t, os.WriteFile(agent, []byte("#!/bin/bash\nfor i in $(seq 1 20000); do echo progress line $i; done\necho 'RuntimeError: the real reason the agent died' >&2\nexit 1\n"), 0o755))
	_, end := e.runAgent(fixtureCase(t, "{steps: 4}"), agentTreatment(t, fixScript, agent, "{{.Instruction}}"), "ext-talker")
	if end.Status != events.RunIncomplete || end.Reason != runner.ReasonAgentExited+": exit status 1" {
		t.Fatalf("ended %s (%s), want incomplete %s: exit status 1", end.Status, end.Reason, runner.ReasonAgentExited)
	}
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "external agent ended") && strings.Contains(l, "run=ext-talker") {
			line = l
		}
	}
	if !strings.Contains(line, "the real reason the agent died") || !strings.Contains(line, "progress line 20000") {
		t.Fatalf("the runner's line on the agent lacks its last words: %.600s", line)
	}
}
