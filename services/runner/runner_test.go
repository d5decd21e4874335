package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// env is a real embedded JetStream server with a runner and a stand-in
// stop decider running on it.
type env struct {
	t   *testing.T
	b   *bus.Bus
	ctx context.Context
	// work is the runner's work dir (empty where a test did not say).
	work string
}

func start(t *testing.T) *env { return startTuned(t, nil, nil) }

// startTuned is start with the runner's configuration changed by the
// options tune returns for the bus and the service handed to hook (to set
// test hooks) before it runs; either may be nil.
func startTuned(t *testing.T, tune func(*bus.Bus) []kit.Option, hook func(*runner.Service, *bus.Bus)) *env {
	t.Helper()
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	work := t.TempDir()
	opts := []kit.Option{runner.WithWorkDir(work), kit.WithWorkers(2), runner.WithDecisionTimeout(time.Minute)}
	if tune != nil {
		opts = append(opts, tune(b)...)
	}
	svc, err := runner.New(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		hook(svc, b)
	}
	done := make(chan struct{}, 2)
	go func() { _ = svc.Run(ctx); done <- struct{}{} }()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return &env{t: t, b: b, ctx: ctx, work: work}
}

// fixtureCase writes a case whose check passes when answer.txt holds 4.
func fixtureCase(t testing.TB, budget string) *cases.Case {
	t.Helper()
	dir := t.TempDir()
	fx := filepath.Join(dir, "fixture")
	must(t, os.MkdirAll(fx, 0o755))
	must(t, os.WriteFile(filepath.Join(fx, "answer.txt"), []byte("3\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(fx, "check.sh"), []byte("#!/bin/bash\ngrep -qx 4 answer.txt || { echo \"answer.txt:1: want 4, got $(cat answer.txt)\"; exit 1; }\n"), 0o755))
	caseYAML := fmt.Sprintf(`id: fix
instruction: Make ./check.sh pass, then call task_complete citing the passing check.
fixture: fixture
budget: %s
checks:
  - id: tests
    command: ./check.sh
    diagnostics:
      pattern: '^(?P<file>[^:]+):(?P<line>\d+): (?P<message>.*)$'
      complete: true
`, budget)
	path := filepath.Join(dir, "case.yaml")
	must(t, os.WriteFile(path, []byte(caseYAML), 0o644))
	c, err := cases.LoadCase(path)
	must(t, err)
	return c
}

func treatment(t testing.TB, script string) *cases.Treatment {
	t.Helper()
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: scripted\nmodel: {provider: scripted, scripts: x}\n"))
	must(t, err)
	tr.Model.ScriptFiles = map[string]string{"fix": script}
	return tr
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// run publishes the case, requests one run and waits for it to end.
func (e *env) run(c *cases.Case, script, run string) (bus.RunLog, events.RunEnded) {
	e.t.Helper()
	p, err := fleettest.Publish(e.ctx, e.b, c, treatment(e.t, script))
	must(e.t, err)
	must(e.t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", run)
	must(e.t, err)
	return log, end
}

// attemptTurn is one scripted candidate: write an answer, run the check.
func attemptTurn(answer string, reserve, cost int) string {
	return fmt.Sprintf(`  - calls:
      - {name: write_file, args: {path: answer.txt, content: "%s\n"}}
      - {name: run_command, args: {command: ./check.sh}}
    usage: {input_tokens: 100, output_tokens: 10, cost: %d}
    reserve: %d
`, answer, cost, reserve)
}

func script(turns ...string) string { return "turns:\n" + strings.Join(turns, "") }

func kinds(log bus.RunLog, k events.Kind) []events.Fact {
	var out []events.Fact
	for _, f := range log.Facts() {
		if f.Kind() == k {
			out = append(out, f)
		}
	}
	return out
}

// The replay cases of the stop-and-handoff seed that the runner owns: a
// spent budget ends exhausted with the limit as its reason and the spend it
// states; a script with no more replies ends incomplete (no budget ran out).
func TestSeedReplayCases(t *testing.T) {
	t.Parallel()
	e := start(t)
	fail := func(a string) string { return attemptTurn(a, 3, 2) }
	pass := `  - calls:
      - {name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {name: run_command, args: {command: ./check.sh}}
      - {name: task_complete, args: {status: done, evidence: [t2/call-2-2]}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 2}
    reserve: 3
`
	cases := []struct {
		name, budget, script string
		status               events.RunStatus
		reason               string
		steps                uint32
		cost                 uint64
	}{
		{"step limit", "{steps: 2, cost: 12}", script(fail("5"), fail("6"), fail("7")), events.RunExhausted, runner.ReasonStepLimit, 2, 4},
		{"budget preflight", "{steps: 6, cost: 12}", script(fail("5"), fail("6"), fail("7"), fail("8"), fail("9"), fail("10")), events.RunExhausted, runner.ReasonBudgetPreflight, 5, 10},
		{"reservation exceeded", "{steps: 6, cost: 12}", script(attemptTurn("5", 3, 4), fail("6")), events.RunExhausted, runner.ReasonReservationExceeded, 1, 4},
		{"observations exhausted", "{steps: 6, cost: 12}", script(fail("5")), events.RunIncomplete, runner.ReasonExhausted, 1, 2},
		{"one step, one row", "{steps: 1, cost: 12}", script(fail("5")), events.RunIncomplete, runner.ReasonExhausted, 1, 2},
		{"empty script", "{steps: 6, cost: 12}", "turns: []\n", events.RunIncomplete, runner.ReasonExhausted, 0, 0},
		{"verified pass", "{steps: 6, cost: 12}", script(fail("5"), pass), events.RunDone, "test decider: proposal accepted", 2, 4},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, end := e.run(fixtureCase(t, c.budget), c.script, fmt.Sprintf("seed%d", i))
			if end.Status != c.status || end.Reason != c.reason || end.Steps != c.steps {
				t.Fatalf("ended %s/%q after %d steps, want %s/%q after %d", end.Status, end.Reason, end.Steps, c.status, c.reason, c.steps)
			}
			if end.Spent.Cost == nil || *end.Spent.Cost != c.cost {
				t.Fatalf("spent %+v, want cost %d", end.Spent, c.cost)
			}
			if end.NextAction == "" {
				t.Fatal("no next action in the handoff")
			}
			// What ran is named: the claim records the runner's identity.
			for _, f := range kinds(log, events.KindRunClaimed) {
				if f.Body.(events.RunClaimed).Identity == "" {
					t.Fatal("a claim without the identity of what ran")
				}
			}
			if len(kinds(log, events.KindCandidateSealed)) != 1 {
				t.Fatal("no sealed candidate")
			}
			// Every completed turn has exactly one decision.
			if tc, sd := len(kinds(log, events.KindTurnCompleted)), len(kinds(log, events.KindStopDecided)); tc != sd {
				t.Fatalf("%d completed turns, %d decisions", tc, sd)
			}
			for i, r := range log.Records {
				if r.Fact.Position != uint64(i+1) {
					t.Fatalf("positions not contiguous at %d", i)
				}
			}
		})
	}
}

// dispatches returns the settled dispatches of a run by evidence ref.
func dispatches(log bus.RunLog) map[string]events.DispatchCompleted {
	out := map[string]events.DispatchCompleted{}
	for _, f := range kinds(log, events.KindDispatchComplete) {
		d := f.Body.(events.DispatchCompleted)
		out[string(d.Dispatch.EvidenceRef)] = d
	}
	return out
}

// Bad calls become typed observations and the run goes on; in a batch with
// a refused call the others still run; nothing escapes the workspace.
func TestBadCallsAreObservationsNotCrashes(t *testing.T) {
	t.Parallel()
	e := start(t)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	c := fixtureCase(t, "{steps: 6}")
	// A symlink in the fixture that points out of the workspace.
	must(t, os.Symlink(filepath.Dir(outside), filepath.Join(c.Fixture, "escape")))
	s := fmt.Sprintf(`turns:
  - calls:
      - {id: a, name: write_file, args_raw: '{"path": "x.txt", "content": '}
      - {id: b, name: launch_rockets, args: {}}
      - {id: c, name: write_file, args: {path: ../outside.txt, content: x}}
      - {id: d, name: write_file, args: {path: %s, content: x}}
      - {id: e, name: write_file, args: {path: escape/outside.txt, content: x}}
      - {id: f, name: write_file, args: {path: x.txt, content: hi}}
      - {id: f, name: write_file, args: {path: y.txt, content: dup}}
      - {id: g, name: edit_file, args: {path: x.txt, nope: 1}}
  - calls:
      - {id: a, name: read_file, args: {path: x.txt}}
      - {id: b, name: task_complete, args: {status: done, evidence: [t2/a]}}
`, outside)
	log, end := e.run(c, s, "bad-calls")
	if end.Status != events.RunDone {
		t.Fatalf("run ended %s: %s", end.Status, end.Reason)
	}
	ds := dispatches(log)
	want := map[string]string{"t1/a": "BAD_ARGUMENTS", "t1/b": "UNKNOWN_TOOL", "t1/c": "PATH_ESCAPE", "t1/d": "PATH_ESCAPE",
		"t1/e": "PATH_ESCAPE", "t1/f#dup1": "DUPLICATE_CALL_ID", "t1/g": "BAD_ARGUMENTS"}
	for ref, code := range want {
		d, ok := ds[ref]
		if !ok || d.Error == nil || d.Error.Code != code || d.Dispatch.Disposition != events.DispositionRejected {
			t.Errorf("%s: %+v, want a rejected dispatch with %s", ref, d, code)
		}
		if !strings.Contains(d.Output, `"ok":false`) || !strings.Contains(d.Output, code) {
			t.Errorf("%s: the model's observation %q does not carry the typed error", ref, d.Output)
		}
	}
	if d := ds["t1/f"]; d.Error != nil || d.Dispatch.Mutation != events.MutationApplied {
		t.Errorf("the allowed call in the batch did not run: %+v", d)
	}
	if d := ds["t2/a"]; !strings.Contains(d.Output, "hi") {
		t.Errorf("the write did not land: %+v", d)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Fatalf("a write escaped the workspace: %v", err)
	}
	var intended []string
	for _, f := range kinds(log, events.KindDispatchIntended) {
		if d := f.Body.(events.DispatchIntended); d.Turn == 1 {
			intended = append(intended, string(d.CallID))
		}
	}
	if len(intended) != 1 || intended[0] != "f" {
		t.Fatalf("only the valid call of turn 1 may be intended, got %v", intended)
	}
}

// Mutation is content identity: an identical rewrite is unchanged, a
// rename of identical content changes the tree, a read is not a mutation.
func TestMutationIsContentIdentity(t *testing.T) {
	t.Parallel()
	e := start(t)
	s := `turns:
  - calls:
      - {id: same, name: write_file, args: {path: answer.txt, content: "3\n"}}
      - {id: mv, name: run_command, args: {command: "mv answer.txt renamed.txt"}}
      - {id: back, name: run_command, args: {command: "cat renamed.txt > /dev/null"}}
      - {id: read, name: read_file, args: {path: renamed.txt}}
      - {id: fail, name: edit_file, args: {path: renamed.txt, old: "nothing like this", new: x}}
      - {id: check, name: run_command, args: {command: ./check.sh}}
`
	log, _ := e.run(fixtureCase(t, "{steps: 1}"), s, "identity")
	ds := dispatches(log)
	for ref, want := range map[string]events.Mutation{"t1/same": events.MutationUnchanged, "t1/mv": events.MutationApplied,
		"t1/back": events.MutationUnchanged, "t1/read": events.MutationNotApplicable, "t1/fail": events.MutationNotApplied} {
		if got := ds[ref].Dispatch.Mutation; got != want {
			t.Errorf("%s: mutation %s, want %s", ref, got, want)
		}
	}
	if ds["t1/same"].Dispatch.Digest == ds["t1/mv"].Dispatch.Digest {
		t.Error("a rename did not change the workspace digest")
	}
	chk := ds["t1/check"].Dispatch
	f, ok := chk.Verification.Variant().(events.VerifyFailed)
	if chk.Check != "tests" || !ok || f.SourceEpoch != 2 || len(f.Diagnostics) == 0 {
		t.Fatalf("the declared check's verification: %+v", chk)
	}
}

// The wall-time budget stops a command that runs past it and ends the run
// exhausted, as a limit and not an error.
func TestWallTimeLimit(t *testing.T) {
	// Serial: its wall budget is seconds, and under a loaded -race run
	// with other tests beside it the budget ran out before the step it
	// is about (TestWallTimeLimit ended before its command was sent).
	e := start(t)
	s := `turns:
  - calls:
      - {id: slow, name: run_command, args: {command: "sleep 30", timeout_seconds: 60}}
  - calls:
      - {id: never, name: write_file, args: {path: x.txt, content: x}}
`
	log, end := e.run(fixtureCase(t, "{steps: 6, wall: 1s}"), s, "wall")
	if end.Status != events.RunExhausted || end.Reason != runner.ReasonWallLimit {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	d := dispatches(log)["t1/slow"]
	if d.Dispatch.Disposition != events.DispositionCanceled {
		t.Fatalf("the slow command: %+v", d.Dispatch)
	}
	if _, ran := dispatches(log)["t2/never"]; ran {
		t.Fatal("a turn started after the wall time ran out")
	}
}

// A model call the wall-time limit cut short was sent and may have been
// billed: run.ended says its tokens and cost are unknown, never zero.
func TestAModelCallCutByTheWallLeavesSpendUnknown(t *testing.T) {
	// Serial, as TestWallTimeLimit: its wall budget is seconds.
	e := start(t)
	s := "turns:\n  - text: done\n    delay: 30s\n"
	log, end := e.run(fixtureCase(t, "{steps: 6, wall: 1s}"), s, "wallcall")
	if end.Status != events.RunExhausted || end.Reason != runner.ReasonWallLimit {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	if len(kinds(log, events.KindTurnStarted)) != 1 || len(kinds(log, events.KindModelReplied)) != 0 {
		t.Fatalf("want one turn started and no reply, log has %d and %d",
			len(kinds(log, events.KindTurnStarted)), len(kinds(log, events.KindModelReplied)))
	}
	if end.Spent.Tokens != nil || end.Spent.Cost != nil {
		t.Fatalf("spent %+v: the unanswered call was counted as known", end.Spent)
	}
}
