package step

import (
	"reflect"
	"testing"

	"github.com/factline/factline/events"
)

// A reply of one turn with one call of each kind the rules tell apart, and
// the facts a run may hold about them.
var (
	writeArgs = `{"path":"a.txt","content":"4"}`
	httpArgs  = `{"url":"http://127.0.0.1/op","body":"x"}`
	writeCall = events.ToolCall{ID: "w", Name: "write_file", Args: writeArgs, ArgsDigest: events.DigestOf([]byte(writeArgs))}
	httpCall  = events.ToolCall{ID: "h", Name: "http_call", Args: httpArgs, ArgsDigest: events.DigestOf([]byte(httpArgs))}
	dupCall   = events.ToolCall{ID: "w#dup1", Name: "write_file", Args: writeArgs, ArgsDigest: events.DigestOf([]byte(writeArgs))}

	// Tools as the runner's registry and case say they are.
	workspaceTool = Tool{Builtin: true, Allowed: true, Effect: events.EffectWrite}
	externalTool  = Tool{Builtin: true, Allowed: true, Effect: events.EffectExternal}
	approvedTool  = Tool{Builtin: true, Allowed: true, Effect: events.EffectExternal, Approval: true}
)

// lastTurnRepeats is a run whose first turn's call a person rejected and
// whose second turn repeats that call, intended and undecided.
var lastTurnRepeats = []events.Body{
	events.RunClaimed{Runner: "r", Lease: 1},
	events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("req")), Reserve: 3},
	events.ModelReplied{Turn: 1, Provider: "scripted", Calls: []events.ToolCall{httpCall}},
	intended(httpCall, events.EffectExternal),
	decided(httpCall, events.SignalReject),
	events.TurnStarted{Turn: 2, ContextDigest: events.DigestOf([]byte("req2")), Reserve: 3},
	events.ModelReplied{Turn: 2, Provider: "scripted", Calls: []events.ToolCall{httpCall}},
	events.DispatchIntended{Turn: 2, CallID: httpCall.ID, Tool: httpCall.Name, OperationID: "r1/t2/h", ArgsDigest: httpCall.ArgsDigest,
		Effect: events.EffectExternal},
}

func replied(calls ...events.ToolCall) []events.Body {
	return []events.Body{
		events.RunClaimed{Runner: "r", Lease: 1},
		events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("req")), Reserve: 3},
		events.ModelReplied{Turn: 1, Provider: "scripted", Calls: calls},
	}
}

func intended(c events.ToolCall, effect events.EffectClass) events.DispatchIntended {
	return events.DispatchIntended{Turn: 1, CallID: c.ID, Tool: c.Name, OperationID: "r1/t1/" + string(c.ID), ArgsDigest: c.ArgsDigest, Effect: effect}
}

func completed(c events.ToolCall) events.DispatchCompleted {
	return events.DispatchCompleted{Turn: 1, Output: "{}", Dispatch: events.CompletedDispatch{CallID: c.ID, EvidenceRef: EvidenceRef(1, c.ID),
		Tool: c.Name, Disposition: events.DispositionExecuted, Mutation: events.MutationApplied, Verification: events.NotVerifier(),
		Digest: events.DigestOf([]byte("ws"))}}
}

func decided(c events.ToolCall, s events.Signal) events.ControlAccepted {
	return events.ControlAccepted{Control: events.ControlRef{ID: "ctl-" + string(s), Signal: s}, CallID: c.ID, ArgsDigest: c.ArgsDigest}
}

// planOf plans call as a run whose facts are bodies stands.
func planOf(t *testing.T, bodies []events.Body, call events.ToolCall, tool Tool, cancel bool) Plan {
	t.Helper()
	return PlanCall(ReadProgress(factsOf(t, bodies...)), call, tool, cancel)
}

func with(bodies []events.Body, more ...events.Body) []events.Body {
	return append(append([]events.Body{}, bodies...), more...)
}

// Every rule that decides what the runner does with a call of a reply,
// one row each, named as the rule.
func TestPlanCall(t *testing.T) {
	fresh := replied(writeCall, httpCall, dupCall)
	for _, c := range []struct {
		rule   string
		bodies []events.Body
		call   events.ToolCall
		tool   Tool
		cancel bool
		want   Act
		reason Reason
		// outcome is a rejection's; approval says the plan awaits one.
		outcome  string
		approval bool
	}{
		{rule: "a call the log settled is taken as it is", bodies: with(fresh, intended(writeCall, events.EffectWrite), completed(writeCall)),
			call: writeCall, tool: workspaceTool, want: PlanTake},
		{rule: "a call the log settled is taken even with a cancel pending", bodies: with(fresh, completed(writeCall)),
			call: writeCall, tool: workspaceTool, cancel: true, want: PlanTake},
		{rule: "a call the log settled is taken even when its tool is gone", bodies: with(fresh, completed(writeCall)),
			call: writeCall, tool: Tool{Invalid: true}, want: PlanTake},
		{rule: "a pending cancel stops the reply before an unsettled call", bodies: fresh,
			call: writeCall, tool: workspaceTool, cancel: true, want: PlanStop},
		{rule: "a pending cancel stops even a call an earlier attempt intended", bodies: with(fresh, intended(httpCall, events.EffectExternal)),
			call: httpCall, tool: externalTool, cancel: true, want: PlanStop},
		{rule: "a duplicate call id is rejected", bodies: fresh,
			call: dupCall, tool: workspaceTool, want: PlanReject, reason: RejectDuplicate},
		{rule: "a duplicate call id is rejected before its tool is judged", bodies: fresh,
			call: dupCall, tool: Tool{Builtin: true, Invalid: true}, want: PlanReject, reason: RejectDuplicate},
		{rule: "a built-in tool the case does not list is not allowed", bodies: fresh,
			call: writeCall, tool: Tool{Builtin: true, Effect: events.EffectWrite}, want: PlanReject, reason: RejectNotAllowed},
		{rule: "a built-in tool the case does not list is not allowed before its arguments are judged", bodies: fresh,
			call: writeCall, tool: Tool{Builtin: true, Invalid: true}, want: PlanReject, reason: RejectNotAllowed},
		{rule: "a tool the case does not list and no built-in has is judged by the registry", bodies: fresh,
			call: writeCall, tool: Tool{Invalid: true}, want: PlanReject, reason: RejectInvalid},
		{rule: "an extension tool the case does not list runs when the registry offers it", bodies: fresh,
			call: writeCall, tool: Tool{Effect: events.EffectRead}, want: PlanRun},
		{rule: "a call the registry refuses is rejected", bodies: fresh,
			call: writeCall, tool: Tool{Builtin: true, Allowed: true, Invalid: true}, want: PlanReject, reason: RejectInvalid},
		{rule: "a call the tool's precheck refuses is rejected", bodies: fresh,
			call: httpCall, tool: Tool{Builtin: true, Allowed: true, Refused: true, Effect: events.EffectExternal, Approval: true},
			want: PlanReject, reason: RejectRefused},
		{rule: "a valid workspace call runs", bodies: fresh,
			call: writeCall, tool: workspaceTool, want: PlanRun},
		{rule: "a workspace call whose contract asks for approval runs once approved", bodies: fresh,
			call: writeCall, tool: Tool{Builtin: true, Allowed: true, Effect: events.EffectWrite, Approval: true}, want: PlanRun, approval: true},
		{rule: "a valid external effect is a fenced send", bodies: fresh,
			call: httpCall, tool: externalTool, want: PlanSend},
		{rule: "an irreversible effect is a fenced send", bodies: fresh,
			call: httpCall, tool: Tool{Allowed: true, Effect: events.EffectIrreversible}, want: PlanSend},
		{rule: "an external effect that needs approval is a fenced send once approved", bodies: fresh,
			call: httpCall, tool: approvedTool, want: PlanSend, approval: true},
		{rule: "a workspace call an earlier attempt intended runs again", bodies: with(fresh, intended(writeCall, events.EffectWrite)),
			call: writeCall, tool: workspaceTool, want: PlanRun},
		{rule: "a workspace call an earlier attempt intended is judged again", bodies: with(fresh, intended(writeCall, events.EffectWrite)),
			call: writeCall, tool: Tool{Invalid: true}, want: PlanReject, reason: RejectInvalid},
		{rule: "an external effect an earlier attempt intended is reconciled", bodies: with(fresh, intended(httpCall, events.EffectExternal)),
			call: httpCall, tool: externalTool, want: PlanReconcile},
		{rule: "an external effect an earlier attempt intended is reconciled even when its tool is gone", bodies: with(fresh, intended(httpCall, events.EffectExternal)),
			call: httpCall, tool: Tool{Invalid: true}, want: PlanReconcile},
		{rule: "an effect is told by its intent's class, not its tool's now", bodies: with(fresh, intended(httpCall, events.EffectIrreversible)),
			call: httpCall, tool: workspaceTool, want: PlanReconcile},
		{rule: "an external effect an earlier attempt intended and a person approved is reconciled",
			bodies: with(fresh, intended(httpCall, events.EffectExternal), decided(httpCall, events.SignalApprove)),
			call:   httpCall, tool: approvedTool, want: PlanReconcile},
		{rule: "an external effect that waited for an approval never given was not sent: it waits again",
			bodies: with(fresh, intended(httpCall, events.EffectExternal)),
			call:   httpCall, tool: approvedTool, want: PlanSend, approval: true},
		{rule: "an external effect that waited for an approval never given is judged again",
			bodies: with(fresh, intended(httpCall, events.EffectExternal)),
			call:   httpCall, tool: Tool{Builtin: true, Allowed: true, Approval: true, Invalid: true}, want: PlanReject, reason: RejectInvalid},
		{rule: "an external effect a person rejected is rejected, not applied",
			bodies: with(fresh, intended(httpCall, events.EffectExternal), decided(httpCall, events.SignalReject)),
			call:   httpCall, tool: approvedTool, want: PlanReject, reason: RejectApproval, outcome: events.OutcomeNotApplied},
		{rule: "an approval of an effect that needs none is not looked at",
			bodies: with(fresh, intended(httpCall, events.EffectExternal), decided(httpCall, events.SignalReject)),
			call:   httpCall, tool: externalTool, want: PlanReconcile},
		{rule: "a decision on another turn's call is not this call's", bodies: lastTurnRepeats,
			call: httpCall, tool: approvedTool, want: PlanSend, approval: true},
	} {
		t.Run(c.rule, func(t *testing.T) {
			got := planOf(t, c.bodies, c.call, c.tool, c.cancel)
			if got.Act() != c.want || got.Reason() != c.reason || got.Outcome() != c.outcome || got.AwaitsApproval() != c.approval {
				t.Errorf("plan %q (reason %d, outcome %q, approval %v), want act %d reason %d outcome %q approval %v",
					got, got.Reason(), got.Outcome(), got.AwaitsApproval(), c.want, c.reason, c.outcome, c.approval)
			}
		})
	}
}

// Once the wait for a person ended, an approved call runs as planned, no
// longer awaiting anything; any other end of the wait rejects it, and an
// external effect's rejection records that it was not applied.
func TestAnApprovalDecidesWhetherThePlanRuns(t *testing.T) {
	fresh := replied(writeCall, httpCall)
	for _, c := range []struct {
		rule    string
		call    events.ToolCall
		tool    Tool
		ok      bool
		want    Act
		outcome string
	}{
		{"an approved send is sent", httpCall, approvedTool, true, PlanSend, ""},
		{"an approved workspace call runs", writeCall, Tool{Builtin: true, Allowed: true, Effect: events.EffectWrite, Approval: true}, true, PlanRun, ""},
		{"a rejected send is rejected, not applied", httpCall, approvedTool, false, PlanReject, events.OutcomeNotApplied},
		{"a rejected workspace call is rejected with no outcome", writeCall, Tool{Builtin: true, Allowed: true, Effect: events.EffectWrite, Approval: true},
			false, PlanReject, ""},
	} {
		t.Run(c.rule, func(t *testing.T) {
			p := planOf(t, fresh, c.call, c.tool, false)
			if !p.AwaitsApproval() {
				t.Fatalf("plan %q awaits no approval", p)
			}
			got := p.Approved(c.ok)
			if got.Act() != c.want || got.AwaitsApproval() || got.Outcome() != c.outcome {
				t.Fatalf("approved %v: %q (outcome %q)", c.ok, got, got.Outcome())
			}
			if !c.ok && got.Reason() != RejectApproval {
				t.Errorf("rejected for %s", got.Reason())
			}
		})
	}
	// A plan that awaits nothing is not changed by a decision.
	p := planOf(t, fresh, writeCall, workspaceTool, false)
	if got := p.Approved(false); got != p {
		t.Errorf("a plan awaiting no approval became %q", got)
	}
}

// The zero plan is no plan: the runner refuses to carry it out.
func TestTheZeroPlanIsNoPlan(t *testing.T) {
	var p Plan
	if p.Act() != 0 || p.String() != "no plan (act 0)" {
		t.Errorf("the zero plan is %q", p)
	}
}

// The intent a turn's evidence records: the one a task_complete call
// carried, else a natural finish proposes done, else the run continues.
func TestTurnIntent(t *testing.T) {
	claim := events.ProposeDone("t1/c1")
	if got := TurnIntent(&claim, 2); !reflect.DeepEqual(got, claim) {
		t.Errorf("a carried intent became %+v", got)
	}
	if got := TurnIntent(nil, 0); !reflect.DeepEqual(got, events.ProposeDone()) {
		t.Errorf("a reply with no calls intends %+v, want a proposal of done", got)
	}
	if got := TurnIntent(nil, 1); !reflect.DeepEqual(got, events.Continue()) {
		t.Errorf("a reply with calls and no claim intends %+v, want continue", got)
	}
}
