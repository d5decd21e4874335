package stall_test

import (
	"fmt"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/staller/stall"
)

// run builds a run's facts the way the runner writes them, folds each into
// a stall state as it goes and commits the staller's observations back into
// the log, so the fold sees exactly what the service would.
type run struct {
	t       tb
	id      string
	policy  stall.Policy
	state   stall.State
	facts   []events.Fact
	pos     uint64
	gen     uint32
	epoch   uint64
	content string // the workspace's current content, named
	turn    uint32
	obs     map[uint32]events.StallObservation
}

// tb is what the builder needs of a test: *testing.T and *rapid.T both.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

func newRun(t tb, p stall.Policy) *run {
	r := &run{t: t, id: "r1", policy: p, state: stall.New(p), gen: 1, epoch: 1, content: "fixture", obs: map[uint32]events.StallObservation{}}
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
	r.state = stall.Fold(r.state, f)
	return f
}

func (r *run) digest() events.Digest { return events.DigestOf([]byte(r.content)) }

// call is one tool call and what came of it.
type call struct {
	tool        string
	args        string
	out         string
	errCode     string
	errMsg      string
	disposition events.Disposition // default executed
	mutation    events.Mutation    // default not_applicable
	content     string             // applied edits: the content written (default: a new one)
	check       string             // a declared check
	result      string             // pass | fail | pending | not_run | unknown
	diags       []string
	complete    bool
	epoch       uint64 // the verification's source epoch (default: the current one)
}

func edit(args string) call {
	return call{tool: "edit_file", args: args, out: "ok", mutation: events.MutationApplied}
}
func editTo(args, content string) call {
	c := edit(args)
	c.content = content
	return c
}
func noopEdit(args string) call {
	return call{tool: "edit_file", args: args, out: "no change", mutation: events.MutationUnchanged}
}
func rejectedEdit(args string) call {
	return call{tool: "edit_file", args: args, disposition: events.DispositionRejected, mutation: events.MutationNotApplied,
		errCode: "denied", errMsg: "not allowed"}
}
func read(args, out string) call { return call{tool: "read_file", args: args, out: out} }
func cmd(args, out string) call  { return call{tool: "run_command", args: args, out: out} }
func pass(check string) call {
	return call{tool: "run_command", args: "check " + check, out: "PASS", check: check, result: "pass"}
}
func fail(check string, complete bool, diags ...string) call {
	return call{tool: "run_command", args: "check " + check, out: fmt.Sprint("FAIL ", diags), check: check, result: "fail", diags: diags, complete: complete}
}
func pending(check string) call {
	return call{tool: "run_command", args: "check " + check, check: check, result: "pending", disposition: events.DispositionDeferred}
}
func taskComplete(args string) call { return call{tool: "task_complete", args: args, out: "noted"} }

// start appends turn.started for the next turn and returns its number.
func (r *run) start() uint32 {
	r.turn++
	r.add(events.OwnerRunner, events.TurnStarted{Turn: r.turn, ContextDigest: events.DigestOf([]byte(fmt.Sprint("ctx", r.turn)))})
	return r.turn
}

// finish appends the rest of the current turn: the reply, each call's
// intent and settlement, and turn.completed.
func (r *run) finish(intent events.ActorIntent, calls ...call) events.Fact {
	r.t.Helper()
	n := r.turn
	tcs := make([]events.ToolCall, len(calls))
	for i, c := range calls {
		tcs[i] = events.ToolCall{ID: events.CallID(fmt.Sprintf("call-%d", i+1)), Name: c.tool, Args: c.args, ArgsDigest: events.DigestOf([]byte(c.args))}
	}
	r.add(events.OwnerRunner, events.ModelReplied{Turn: n, Provider: "scripted", Calls: tcs})
	var ds []events.CompletedDispatch
	for i, c := range calls {
		id := tcs[i].ID
		disp := c.disposition
		if disp == "" {
			disp = events.DispositionExecuted
		}
		mut := c.mutation
		if mut == "" {
			mut = events.MutationNotApplicable
		}
		if disp != events.DispositionRejected {
			r.add(events.OwnerRunner, events.DispatchIntended{Turn: n, CallID: id, Tool: c.tool, OperationID: fmt.Sprintf("op-%d-%s", n, id),
				ArgsDigest: tcs[i].ArgsDigest, Effect: events.EffectWrite})
		}
		if mut == events.MutationApplied {
			r.epoch++
			r.content = c.content
			if r.content == "" {
				r.content = fmt.Sprintf("content@%d", r.epoch)
			}
		}
		v := events.NotVerifier()
		ep := c.epoch
		if ep == 0 {
			ep = r.epoch
		}
		switch c.result {
		case "pass":
			v = events.Passed(ep)
		case "fail":
			var diags []events.Diagnostic
			for _, m := range c.diags {
				diags = append(diags, events.Diagnostic{Message: m})
			}
			v = events.Failed(ep, c.complete, diags...)
		case "pending":
			v = events.VerificationPending()
		case "not_run":
			v = events.NotRun()
		case "unknown":
			v = events.VerificationUnknown("timed out")
		}
		d := events.CompletedDispatch{
			CallID: id, EvidenceRef: events.EvidenceRef(fmt.Sprintf("t%d/%s", n, id)),
			Disposition: disp, Mutation: mut, Verification: v, Check: c.check, Tool: c.tool, Digest: r.digest(),
		}
		var terr *events.ToolError
		if c.errCode != "" {
			terr = &events.ToolError{Code: c.errCode, Message: c.errMsg}
		}
		r.add(events.OwnerRunner, events.DispatchCompleted{Turn: n, Dispatch: d, Output: c.out, Error: terr})
		ds = append(ds, d)
	}
	return r.add(events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: r.id, TaskGeneration: r.gen, Turn: n, EvidencePosition: r.pos + 1, ActorIntent: intent, Dispatches: ds,
	}})
}

// observe commits the staller's observation of turn n and returns it.
func (r *run) observe(n uint32) events.StallObservation {
	r.t.Helper()
	if !r.state.HasTurn(n) {
		r.t.Fatalf("turn %d not folded", n)
	}
	o := stall.Observe(r.state, n)
	r.add(events.OwnerStaller, events.StallObserved{Turn: n, Observation: o})
	r.obs[n] = o
	return o
}

// step plays one whole turn the way the services interleave: started,
// completed, observed. Its intent is continue.
func (r *run) step(calls ...call) events.StallObservation {
	r.t.Helper()
	r.start()
	r.finish(events.Continue(), calls...)
	return r.observe(r.turn)
}

// steer starts a new task generation.
func (r *run) steer(instruction string) {
	r.gen++
	r.add(events.OwnerRunner, events.TaskGenerationStarted{Generation: r.gen, Instruction: instruction})
}

func action(o events.StallObservation) string {
	if o.Action == nil {
		return "none"
	}
	return o.Action.Type()
}

func retryOf(t testing.TB, o events.StallObservation) events.StallRetry {
	t.Helper()
	if o.Action == nil {
		t.Fatalf("no action, want retry (checkpoint %+v)", o.Checkpoint)
	}
	r, ok := o.Action.Variant().(events.StallRetry)
	if !ok {
		t.Fatalf("action %s, want retry", o.Action.Type())
	}
	return r
}

func stopOf(t testing.TB, o events.StallObservation) events.StallStop {
	t.Helper()
	if o.Action == nil {
		t.Fatalf("no action, want stop (checkpoint %+v)", o.Checkpoint)
	}
	s, ok := o.Action.Variant().(events.StallStop)
	if !ok {
		t.Fatalf("action %s, want stop", o.Action.Type())
	}
	return s
}

// defaults mirrors cases.DefaultStall, which this core must not import.
func defaults() stall.Policy {
	return stall.Policy{
		RepeatedFailure: 2, RepeatedObservation: 3, RepeatedError: 3, IdleTurns: 3,
		Alternation: 3, FailingVerifications: 6, RepairBudget: 2,
		Requirements: []stall.Requirement{{ID: "tests", Check: "tests"}},
	}
}

// only returns a policy with every pattern off but the ones set by fn.
func only(fn func(p *stall.Policy)) stall.Policy {
	p := stall.Policy{RepairBudget: 2, Requirements: []stall.Requirement{{ID: "tests", Check: "tests"}}}
	fn(&p)
	return p
}
