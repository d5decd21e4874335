package stop_test

import (
	"fmt"
	"strings"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/decider/stop"
)

// tb is what the builder needs of a test: *testing.T and *rapid.T both.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// run builds a run's facts the way the runner writes them and folds each
// into a decider state as it goes.
type run struct {
	t       tb
	id      string
	state   stop.State
	facts   []events.Fact
	pos     uint64
	gen     uint32
	epoch   uint64
	content string
	turn    uint32
}

func newRun(t tb) *run {
	r := &run{t: t, id: "r1", state: stop.New(), gen: 1, epoch: 1, content: "fixture"}
	r.add(events.OwnerRunner, events.RunClaimed{Runner: "test", Lease: 1})
	return r
}

func (r *run) add(owner events.Owner, b events.Body) events.Fact {
	r.t.Helper()
	r.pos++
	f, err := events.NewFact(events.Meta{
		Suite: "s", Run: r.id, TaskGeneration: r.gen, Position: r.pos,
		Producer: events.Producer{Service: owner, Instance: "test"},
	}, b)
	if err != nil {
		r.t.Fatalf("fact %s: %v", b.Kind(), err)
	}
	r.facts = append(r.facts, f)
	r.state = stop.Fold(r.state, f)
	return f
}

// call is one tool call and what came of it.
type call struct {
	tool        string
	args        string
	disposition events.Disposition
	mutation    events.Mutation
	content     string
	check       string
	result      string // pass | fail | pending | not_run
	diags       []string
	epoch       uint64
}

func edit(args string) call {
	return call{tool: "edit_file", args: args, mutation: events.MutationApplied}
}
func editTo(args, content string) call {
	c := edit(args)
	c.content = content
	return c
}
func read(args string) call { return call{tool: "read_file", args: args} }
func rejected(args string) call {
	return call{tool: "edit_file", args: args, disposition: events.DispositionRejected, mutation: events.MutationNotApplied}
}
func pass(check string) call {
	return call{tool: "run_command", args: "check " + check, check: check, result: "pass"}
}
func fail(check string, diags ...string) call {
	return call{tool: "run_command", args: "check " + check, check: check, result: "fail", diags: diags}
}
func pending(check string) call {
	return call{tool: "run_command", args: "check " + check, check: check, result: "pending", disposition: events.DispositionDeferred}
}
func claim() call { return call{tool: "task_complete", args: `{"status":"done"}`} }

// step appends one turn (started, reply, dispatches, completed) with the
// given intent and returns its number.
func (r *run) step(intent events.ActorIntent, calls ...call) uint32 {
	r.t.Helper()
	r.turn++
	n := r.turn
	r.add(events.OwnerRunner, events.TurnStarted{Turn: n, ContextDigest: events.DigestOf([]byte(fmt.Sprint("ctx", n)))})
	tcs := make([]events.ToolCall, len(calls))
	for i, c := range calls {
		tcs[i] = events.ToolCall{ID: events.CallID(fmt.Sprintf("call-%d", i+1)), Name: c.tool, Args: c.args, ArgsDigest: events.DigestOf([]byte(c.args))}
	}
	r.add(events.OwnerRunner, events.ModelReplied{Turn: n, Provider: "scripted", Calls: tcs})
	var ds []events.CompletedDispatch
	for i, c := range calls {
		disp, mut := c.disposition, c.mutation
		if disp == "" {
			disp = events.DispositionExecuted
		}
		if mut == "" {
			mut = events.MutationNotApplicable
		}
		if mut == events.MutationApplied {
			r.epoch++
			r.content = c.content
			if r.content == "" {
				r.content = fmt.Sprintf("content@%d", r.epoch)
			}
		}
		ep := c.epoch
		if ep == 0 {
			ep = r.epoch
		}
		v := events.NotVerifier()
		switch c.result {
		case "pass":
			v = events.Passed(ep)
		case "fail":
			var diags []events.Diagnostic
			for _, m := range c.diags {
				diags = append(diags, events.Diagnostic{Message: m})
			}
			v = events.Failed(ep, true, diags...)
		case "pending":
			v = events.VerificationPending()
		case "not_run":
			v = events.NotRun()
		}
		d := events.CompletedDispatch{
			CallID: tcs[i].ID, EvidenceRef: ref(n, i+1), Disposition: disp, Mutation: mut,
			Verification: v, Check: c.check, Tool: c.tool, Digest: events.DigestOf([]byte(r.content)),
		}
		r.add(events.OwnerRunner, events.DispatchCompleted{Turn: n, Dispatch: d, Output: "out"})
		ds = append(ds, d)
	}
	r.add(events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: r.id, TaskGeneration: r.gen, Turn: n, EvidencePosition: r.pos + 1, ActorIntent: intent, Dispatches: ds,
	}})
	return n
}

// ref is the runner's evidence ref of call i of turn n.
func ref(n uint32, i int) events.EvidenceRef {
	return events.EvidenceRef(fmt.Sprintf("t%d/call-%d", n, i))
}

// steer starts a new task generation.
func (r *run) steer(instruction string) {
	r.gen++
	r.add(events.OwnerRunner, events.ControlAccepted{Control: events.ControlRef{ID: fmt.Sprint("ctl-", r.gen), Signal: events.SignalSteer}, Instruction: instruction})
	r.add(events.OwnerRunner, events.TaskGenerationStarted{Generation: r.gen, Instruction: instruction})
}

// observed appends a stall observation of turn n carrying action (nil for
// none) and returns it.
func (r *run) observed(n uint32, a *events.StallAction) events.StallObservation {
	r.t.Helper()
	o := events.StallObservation{Position: r.pos, Action: a}
	r.add(events.OwnerStaller, events.StallObserved{Turn: n, Observation: o})
	return o
}

// decide observes turn n with the stall action a, decides it under p and
// commits the decision; the decision must make a valid fact.
func (r *run) decide(n uint32, a *events.StallAction, p stop.Policy) events.StopDecision {
	r.t.Helper()
	o := r.observed(n, a)
	d := stop.Decide(r.state, n, o, p)
	r.add(events.OwnerDecider, events.StopDecided{Decision: d})
	return d
}

func finishOf(t tb, d events.StopDecision) events.StopFinish {
	t.Helper()
	f, ok := d.Result.Variant().(events.StopFinish)
	if !ok {
		t.Fatalf("result %s %+v, want finish", d.Result.Type(), d.Result.Variant())
	}
	return f
}

func continueOf(t tb, d events.StopDecision) events.StopContinue {
	t.Helper()
	c, ok := d.Result.Variant().(events.StopContinue)
	if !ok {
		t.Fatalf("result %s %+v, want continue", d.Result.Type(), d.Result.Variant())
	}
	return c
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// testsPolicy is a case with one required check, "tests".
func testsPolicy() stop.Policy {
	return stop.Policy{
		Checks:       []stop.Check{{ID: "tests", Command: "./check.sh"}},
		Requirements: []stop.Requirement{{ID: "tests", Check: "tests"}},
		ActorModel:   "scripted/actor",
	}
}

func stallStop(cause string, unmet ...events.RequirementID) *events.StallAction {
	a := events.StopStall(events.StallStop{Cause: cause, Unmet: unmet, Evidence: []events.EvidenceRef{"t1/call-1"}})
	return &a
}

func stallRetry(cause string) *events.StallAction {
	a := events.Retry(events.StallRetry{Cause: cause, Feedback: "try something else", Remaining: 1})
	return &a
}
