package step

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

var (
	delegateArgs = `{"instruction":"find it"}`
	delegateCall = events.ToolCall{ID: "d", Name: DelegateTool, Args: delegateArgs, ArgsDigest: events.DigestOf([]byte(delegateArgs))}
	delegateTool = Tool{Builtin: true, Allowed: true, Effect: events.EffectExternal, Delegate: true}
	parentTools  = []string{"read_file", "write_file", "task_complete", DelegateTool}
)

func delegated(run string, d events.Delegation) events.DispatchIntended {
	in := intended(delegateCall, events.EffectExternal)
	d.Run = run
	in.Delegation = &d
	return in
}

func childSettled(c events.ChildOutcome) events.DispatchCompleted {
	done := completed(delegateCall)
	done.Dispatch.Mutation = events.MutationNotApplicable
	done.Child = &c
	return done
}

// A valid delegate call delegates: it is neither run in the workspace nor
// sent as an external effect, although its contract's class is external.
func TestAValidDelegateCallDelegates(t *testing.T) {
	if got := planOf(t, replied(delegateCall), delegateCall, delegateTool, false); got.Act() != PlanDelegate {
		t.Fatalf("planned %s", got)
	}
}

// A delegate call an earlier attempt intended is delegated again, not
// reconciled as an unknown external effect: the child is found by its
// run ID, never started twice.
func TestADelegateCallIntendedEarlierIsFoundNotReconciled(t *testing.T) {
	bodies := with(replied(delegateCall), delegated("r1-d1-d", events.Delegation{Steps: 3}))
	if got := planOf(t, bodies, delegateCall, delegateTool, false); got.Act() != PlanDelegate {
		t.Fatalf("planned %s", got)
	}
	if got := planOf(t, bodies, delegateCall, delegateTool, true); got.Act() != PlanStop {
		t.Fatalf("with a cancel pending: planned %s", got)
	}
}

// A delegate call the treatment does not offer is rejected like any
// built-in tool the run is not offered, and bad arguments like any call's.
func TestADelegateCallNotOfferedOrInvalidIsRejected(t *testing.T) {
	if got := planOf(t, replied(delegateCall), delegateCall, Tool{Builtin: true, Delegate: true}, false); got.Reason() != RejectNotAllowed {
		t.Fatalf("not offered: planned %s", got)
	}
	if got := planOf(t, replied(delegateCall), delegateCall, Tool{Builtin: true, Allowed: true, Invalid: true, Delegate: true}, false); got.Reason() != RejectInvalid {
		t.Fatalf("invalid: planned %s", got)
	}
}

// A child gets the parent's permissions or fewer, never more: a tool the
// parent is not offered is refused, naming it, and so is delegate itself.
func TestADelegationAskingForAToolTheParentLacksIsDenied(t *testing.T) {
	parent := DelegateParent{Offered: parentTools, Budget: Budget{Steps: 10}}
	for _, tool := range []string{"run_command", DelegateTool} {
		_, _, denied := Delegate(DelegateAsk{Tools: []string{"read_file", tool}}, parent, "c")
		if denied == nil || denied.Reason != DenyTool || denied.Tool != tool || !strings.Contains(denied.Error(), tool) {
			t.Fatalf("asking for %s: %v", tool, denied)
		}
	}
	_, tools, denied := Delegate(DelegateAsk{}, parent, "c")
	if denied != nil || !slices.Equal(tools, []string{"read_file", "write_file", "task_complete"}) {
		t.Fatalf("no tools asked: %v %v", tools, denied)
	}
}

// A child's budget is carved out of what the parent has left: what the
// call asks if it fits, half of what is left if it asks nothing, and a
// refusal naming the limit when it asks for more than is left (spent and
// reserved by running children both count).
func TestAChildsBudgetIsCarvedOutOfWhatTheParentHasLeft(t *testing.T) {
	parent := DelegateParent{Offered: parentTools, Budget: Budget{Steps: 10, Cost: 100},
		Spend: Spend{Steps: 2, Charged: 20, Reserved: Budget{Steps: 2, Cost: 20}}, WallMillis: 60_000, WallLeft: 30_000}
	d, _, denied := Delegate(DelegateAsk{}, parent, "c")
	if denied != nil || d.Steps != 3 || d.Cost != 30 || d.InputTokens != 0 || d.WallMillis != 30_000 || d.Run != "c" {
		t.Fatalf("the default share: %+v %v", d, denied)
	}
	d, _, denied = Delegate(DelegateAsk{Steps: 6, Cost: 60, InputTokens: 500, WallMillis: 90_000}, parent, "c")
	if denied != nil || d.Steps != 6 || d.Cost != 60 || d.InputTokens != 500 || d.WallMillis != 30_000 {
		t.Fatalf("an ask that fits: %+v %v", d, denied)
	}
	_, _, denied = Delegate(DelegateAsk{Cost: 61}, parent, "c")
	var dd *DelegationDenied
	if !errors.As(error(denied), &dd) || dd.Reason != DenyBudget || dd.Limit != "cost units" || dd.Asked != 61 || dd.Left != 60 {
		t.Fatalf("an ask past what is left: %+v", denied)
	}
	spent := parent
	spent.Spend.Steps = 8
	if _, _, denied = Delegate(DelegateAsk{}, spent, "c"); denied == nil || denied.Limit != "steps" {
		t.Fatalf("no steps left: %v", denied)
	}
}

// While a child runs its reservation counts against the parent's limits;
// once its end is settled, what it spent replaces the reservation: the
// child is charged exactly once and the unused rest is released.
func TestAChildIsChargedItsReservationWhileItRunsAndItsSpendOnceItEnds(t *testing.T) {
	running := []events.Body{
		events.RunClaimed{Runner: "r", Lease: 1},
		events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("req")), Reserve: 3},
		events.ModelReplied{Turn: 1, Provider: "scripted", Calls: []events.ToolCall{delegateCall},
			Usage: &events.Usage{InputTokens: 0, OutputTokens: 0, Cost: new(uint64)}},
		delegated("r1-d1-d", events.Delegation{Steps: 4, Cost: 40}),
	}
	s := Tally(factsOf(t, running...))
	if s.Steps != 1 || s.Charged != 0 || s.Reserved.Steps != 4 || s.Reserved.Cost != 40 {
		t.Fatalf("while the child runs: %+v", s)
	}
	if got := Preflight(Budget{Steps: 10, Cost: 45}, s, 6); got != ReasonBudgetPreflight {
		t.Fatalf("a call that does not fit beside the reservation: %q", got)
	}
	cost := uint64(7)
	ended := with(running, childSettled(events.ChildOutcome{Run: "r1-d1-d", Status: events.RunDone, Reason: "done", Steps: 2,
		Usage: &events.Usage{InputTokens: 200, OutputTokens: 20, Cost: &cost}, Charged: 7}))
	s = Tally(factsOf(t, ended...))
	if s.Steps != 3 || s.Charged != 7 || s.Cost != 7 || s.InputTokens != 200 || s.OutputTokens != 20 || s.Reserved != (Budget{}) {
		t.Fatalf("once the child ended: %+v", s)
	}
	if got := Preflight(Budget{Steps: 10, Cost: 45}, s, 6); got != "" {
		t.Fatalf("the released reservation still refuses: %q", got)
	}
	// A child whose usage is unknown leaves the parent's unknown.
	unknown := with(running, childSettled(events.ChildOutcome{Run: "r1-d1-d", Status: events.RunDone, Reason: "done", Steps: 1, Charged: 5}))
	if s := Tally(factsOf(t, unknown...)); s.TokensKnown || s.CostKnown || s.Charged != 5 {
		t.Fatalf("a child of unknown usage: %+v", s)
	}
}

// A child's run ID is made from the call's operation, so the same call
// always names the same child, and two calls never share one.
func TestAChildsRunIDIsMadeFromTheCallsOperation(t *testing.T) {
	if got := ChildRun("r1", 2, "c-1"); got != "r1-d2-c-1" {
		t.Fatalf("plain: %s", got)
	}
	a, b := ChildRun("r1", 2, "a.b"), ChildRun("r1", 2, "a:b")
	if a == b || events.ValidateToken("run", a) != nil || events.ValidateToken("run", b) != nil || a != ChildRun("r1", 2, "a.b") {
		t.Fatalf("cleaned: %s %s", a, b)
	}
	long := ChildRun(strings.Repeat("r", 120), 2, "c")
	if events.ValidateToken("run", long) != nil {
		t.Fatalf("long: %s", long)
	}
}

// A child's outcome is its run.ended, its last reply's text and its
// spend; a child that has not ended has none.
func TestAChildsOutcomeIsReadFromItsFacts(t *testing.T) {
	cost := uint64(3)
	bodies := []events.Body{
		events.RunClaimed{Runner: "r", Lease: 1},
		events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("q")), Reserve: 5},
		events.ModelReplied{Turn: 1, Provider: "scripted", Text: "looking", Usage: &events.Usage{InputTokens: 10, OutputTokens: 1, Cost: &cost}},
		events.TurnStarted{Turn: 2, ContextDigest: events.DigestOf([]byte("q2")), Reserve: 5},
		events.ModelReplied{Turn: 2, Provider: "scripted", Text: "it is in lib/sum.go", Usage: &events.Usage{InputTokens: 20, OutputTokens: 2, Cost: &cost}},
	}
	if _, ok := ChildOutcomeOf("c", factsOf(t, bodies...)); ok {
		t.Fatal("an outcome before the child ended")
	}
	bodies = append(bodies, events.RunEnded{Status: events.RunDone, Reason: "done"})
	o, ok := ChildOutcomeOf("c", factsOf(t, bodies...))
	if !ok || o.Status != events.RunDone || o.Answer != "it is in lib/sum.go" || o.Steps != 2 || o.Charged != 6 ||
		o.Usage == nil || o.Usage.InputTokens != 30 || o.Usage.OutputTokens != 3 || *o.Usage.Cost != 6 {
		t.Fatalf("outcome: %+v", o)
	}
}

// A delegate call left open as the run ends is settled through its
// child, never as an unknown external effect.
func TestADelegateCallLeftOpenIsSettledThroughItsChild(t *testing.T) {
	p := ReadProgress(factsOf(t, with(replied(delegateCall), delegated("r1-d1-d", events.Delegation{Steps: 2}))...))
	if l := PlanLeft(p, delegateCall.ID); l.Act() != LeftChild || l.Mutation() != events.MutationNotApplicable {
		t.Fatalf("left open: %v", l.Act())
	}
}

// A delegation that would leave the child no tool is denied: a case's
// tool list is stored without an empty one (an empty list and none read
// back alike), and a case with none is offered every built-in tool, more
// than any parent that delegates may have.
func TestADelegationThatLeavesTheChildNoToolIsDenied(t *testing.T) {
	for name, c := range map[string]struct {
		ask     []string
		offered []string
	}{
		"tools: [] asked":              {ask: []string{}, offered: parentTools},
		"the parent has only delegate": {ask: nil, offered: []string{DelegateTool}},
	} {
		_, tools, denied := Delegate(DelegateAsk{Tools: c.ask}, DelegateParent{Offered: c.offered, Budget: Budget{Steps: 10}}, "c")
		if denied == nil || denied.Reason != DenyNoTool || !strings.Contains(denied.Error(), "at least one of this run's tools") {
			t.Errorf("%s: tools %v, denied %v; want DenyNoTool", name, tools, denied)
		}
	}
}
