package step

import (
	"fmt"

	"github.com/factline/factline/events"
)

// A reply's calls are settled one by one, each as its plan says. The plan
// is decided here, from where the run stands (its Progress) and what the
// runner's registry says of the call's tool (Tool); the runner carries it
// out and commits what it says (services/runner, dispatch.go). How an
// external effect's send goes on from there is Effect's to decide
// (effect.go).

// Tool is what the runner knows of a call's tool before anything runs:
// what the case allows, what its registry offers and how the call's
// arguments fare against the tool's contract. The core cannot name the
// registry or the case; the runner fills this in for each call.
type Tool struct {
	// Builtin says a built-in tool has the call's name.
	Builtin bool
	// Allowed says the tool is offered: the case lists it and its
	// treatment does not leave it out.
	Allowed bool
	// Invalid says the registry refused the call: no tool of that name is
	// offered, or its arguments are not JSON satisfying the tool's schema.
	Invalid bool
	// Refused says the tool refused the valid arguments before anything
	// ran (its precheck: a path outside the workspace, a URL the case does
	// not allow).
	Refused bool
	// Effect is the tool's effect class (a tool the call is valid for).
	Effect events.EffectClass
	// Approval says a person approves the tool's calls before they run:
	// the case says so, or the tool's contract.
	Approval bool
	// Delegate says the call is the built-in delegate tool's: it starts a
	// child run (PlanDelegate) rather than running anything itself.
	Delegate bool
}

// Act is what a plan has the runner do with a call.
type Act int

// The acts of a call's plan.
const (
	// PlanTake: the log settled the call already (a takeover); its
	// dispatch is taken as it is.
	PlanTake Act = iota + 1
	// PlanStop: a cancel is pending, and an accepted cancel allows no
	// further effect: this call and the reply's later ones are not run
	// (they are settled not_run when the run ends).
	PlanStop
	// PlanReject: the call is settled rejected without running, for the
	// plan's Reason.
	PlanReject
	// PlanRun: the call runs in the workspace. Its dispatch.intended is
	// committed first (again, under the same message ID, for a call an
	// earlier attempt intended: running a workspace call again cannot
	// double its effect, the workspace being the last settled one), and,
	// when the plan awaits approval, a person approves it.
	PlanRun
	// PlanSend: the call is an external effect sent for the first time.
	// Its dispatch.intended is committed first, a person approves it when
	// the plan awaits approval, and it is a fenced send: nothing leaves
	// unless the fence holds (Effect.AfterFence). Its send goes on as
	// Effect says, from Effect.Begin(false).
	PlanSend
	// PlanReconcile: the call is an external effect an earlier attempt
	// intended and may have sent, its outcome unknown: it is looked for
	// under its operation ID before it is ever sent again, as Effect
	// says, from Effect.Begin(true).
	PlanReconcile
	// PlanDelegate: the call is a delegate call, offered and valid: the
	// runner decides the child's grant (Delegate), commits the intent
	// with it, starts the child (or finds it: an earlier attempt intended
	// the call, and the child's run ID is the operation's) and waits for
	// the child's end, which settles the call.
	PlanDelegate
)

// Reason is why a call is rejected without running.
type Reason int

// The reasons a call is rejected.
const (
	// RejectDuplicate: the model reused a call ID within one reply
	// (NameCalls marked the later call).
	RejectDuplicate Reason = iota + 1
	// RejectNotAllowed: a built-in tool the case does not list, or its
	// treatment does not offer.
	RejectNotAllowed
	// RejectInvalid: the registry refused the call (no such tool offered,
	// arguments not satisfying its schema); its refusal is the observation.
	RejectInvalid
	// RejectRefused: the tool's precheck refused the arguments; its
	// refusal is the observation.
	RejectRefused
	// RejectApproval: a person rejected the operation, or nobody approved
	// it in time, or a cancel ended the wait: it was not run.
	RejectApproval
)

// Plan is what the runner does with one call of a reply. PlanCall decides
// it, and only this package makes one: its fields are unexported, and the
// runner's guard test refuses a literal of it anywhere else. The zero Plan
// is no plan, which the runner refuses to carry out.
type Plan struct {
	act    Act
	reason Reason
	// outcome is a rejection's outcome: not_applied for an external
	// effect, whose sink never saw it.
	outcome  string
	approval bool
}

// Act is what the plan has the runner do.
func (p Plan) Act() Act { return p.act }

// Reason is why a PlanReject rejects the call.
func (p Plan) Reason() Reason { return p.reason }

// Outcome is the outcome the dispatch of a rejected external effect
// records (not_applied); "" for a call whose effects stay in the workspace.
func (p Plan) Outcome() string { return p.outcome }

// AwaitsApproval says a person approves a PlanRun or PlanSend call, after
// its intent is committed and before anything runs (Approved).
func (p Plan) AwaitsApproval() bool { return p.approval }

// Approved is the plan once the wait for a person's decision ended:
// approved, the call runs as planned; otherwise (a rejection, nobody
// deciding in time, a cancel ending the wait) it is rejected, and an
// external effect's dispatch records that it was not applied. A plan that
// awaits no approval is returned as it is.
func (p Plan) Approved(ok bool) Plan {
	switch {
	case !p.approval:
		return p
	case ok:
		p.approval = false
		return p
	}
	return rejectFor(RejectApproval, p.act == PlanSend)
}

// String names the plan, for logs and tests.
func (p Plan) String() string {
	switch p.act {
	case PlanTake:
		return "take the settled dispatch"
	case PlanStop:
		return "stop: a cancel is pending"
	case PlanReject:
		return fmt.Sprintf("reject (%s)", p.reason)
	case PlanRun, PlanSend:
		what := "run in the workspace"
		if p.act == PlanSend {
			what = "fenced send"
		}
		if p.approval {
			what = "await approval, then " + what
		}
		return what
	case PlanReconcile:
		return "reconcile the unknown outcome"
	case PlanDelegate:
		return "delegate to a child run"
	}
	return fmt.Sprintf("no plan (act %d)", p.act)
}

// String names the reason.
func (r Reason) String() string {
	switch r {
	case RejectDuplicate:
		return "duplicate call ID"
	case RejectNotAllowed:
		return "tool not allowed"
	case RejectInvalid:
		return "invalid call"
	case RejectRefused:
		return "refused by the tool's precheck"
	case RejectApproval:
		return "not approved"
	}
	return fmt.Sprintf("reason %d", int(r))
}

// PlanCall decides what the runner does with one call of the reply p's
// turn holds, from the run's facts (p) and what the runner's registry says
// of the call's tool (t); cancel says a cancel is pending.
//
//   - A call the log settled is taken as it is, whatever else holds.
//   - A pending cancel stops the reply before any call not yet settled.
//   - A delegate call an earlier attempt intended goes on as a
//     delegation: its child is found by its run ID, never started again.
//   - An external effect an earlier attempt intended and never settled
//     may have reached its sink: it is reconciled, never repeated blindly;
//     unless a person had to approve it and never did (it was never sent:
//     it is planned afresh and waits for approval again) or rejected it
//     (it is rejected, not applied). Its effect class is the one its
//     intent recorded.
//   - Any other call (a workspace call intended earlier included) is
//     checked in order: a duplicate call ID, a built-in tool the case does
//     not list, a call the registry refuses, a call the tool's precheck
//     refuses are rejected; a delegate call delegates; the rest run in
//     the workspace or, for an
//     external effect, are sent behind the fence, after a person's
//     approval when the case or the tool's contract asks for one.
func PlanCall(p Progress, call events.ToolCall, t Tool, cancel bool) Plan {
	if _, ok := p.Completed[call.ID]; ok {
		return Plan{act: PlanTake}
	}
	if cancel {
		return Plan{act: PlanStop}
	}
	if in, ok := p.Intended[call.ID]; ok && in.Delegation != nil {
		// The child was started, or may have been: it is found by its
		// run ID, never started twice.
		return Plan{act: PlanDelegate}
	}
	if in, ok := p.Intended[call.ID]; ok && in.Effect.IsEffect() {
		if t.Approval {
			switch p.Approvals[call.ID] {
			case "":
				// It waited for a person who never decided: it was not sent.
				return afresh(call, t)
			case events.SignalReject:
				return rejectFor(RejectApproval, true)
			}
		}
		return Plan{act: PlanReconcile}
	}
	return afresh(call, t)
}

// afresh plans a call as if no attempt had seen it before.
func afresh(call events.ToolCall, t Tool) Plan {
	switch {
	case IsDuplicate(call.ID):
		return rejectFor(RejectDuplicate, false)
	case t.Builtin && !t.Allowed:
		return rejectFor(RejectNotAllowed, false)
	case t.Invalid:
		return rejectFor(RejectInvalid, false)
	case t.Refused:
		return rejectFor(RejectRefused, false)
	case t.Delegate:
		return Plan{act: PlanDelegate}
	case t.Effect.IsEffect():
		return Plan{act: PlanSend, approval: t.Approval}
	}
	return Plan{act: PlanRun, approval: t.Approval}
}

func rejectFor(r Reason, effect bool) Plan {
	p := Plan{act: PlanReject, reason: r}
	if effect {
		p.outcome = events.OutcomeNotApplied
	}
	return p
}

// TurnIntent is the actor intent a completed turn's evidence records: the
// one a task_complete call of its reply carried (carried), else, for a
// reply with no calls, a proposal of done (a natural finish is a proposal
// too: the stop decider judges it), else continue.
func TurnIntent(carried *events.ActorIntent, calls int) events.ActorIntent {
	switch {
	case carried != nil:
		return *carried
	case calls == 0:
		return events.ProposeDone()
	}
	return events.Continue()
}
