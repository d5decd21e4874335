package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/runner/tools"
)

// delegating is a treatment that allows delegation, with the parent's
// script for case fix and the child's for its children.
func delegating(t *testing.T, parent, child string) *cases.Treatment {
	t.Helper()
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: delegating\nmodel: {provider: scripted, scripts: x}\ndelegation: {allowed: true}\n"))
	must(t, err)
	tr.Model.ScriptFiles = map[string]string{"fix": parent, "fix.child": child}
	return tr
}

// startDelegating requests run as case c under a delegating treatment.
func (e *env) startDelegating(c *cases.Case, parent, child, run string) {
	e.t.Helper()
	p, err := fleettest.Publish(e.ctx, e.b, c, delegating(e.t, parent, child))
	must(e.t, err)
	must(e.t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
}

// usageSum sums the usage of every model.replied of a log.
func usageSum(t *testing.T, log bus.RunLog) (in, out, cost uint64) {
	t.Helper()
	for _, f := range kinds(log, events.KindModelReplied) {
		u := f.Body.(events.ModelReplied).Usage
		if u == nil || u.Cost == nil {
			t.Fatalf("%s: a reply without usage", f.Run)
		}
		in, out, cost = in+u.InputTokens, out+u.OutputTokens, cost+*u.Cost
	}
	return in, out, cost
}

func settledDelegation(t *testing.T, log bus.RunLog) events.DispatchCompleted {
	t.Helper()
	for _, f := range kinds(log, events.KindDispatchComplete) {
		if b := f.Body.(events.DispatchCompleted); b.Dispatch.Tool == "delegate" {
			return b
		}
	}
	t.Fatalf("%s: no delegate call settled", log.Run)
	return events.DispatchCompleted{}
}

const childAnswers = `turns:
  - calls:
      - {name: read_file, args: {path: answer.txt}}
    usage: {input_tokens: 50, output_tokens: 5, cost: 1}
    reserve: 2
  - text: answer.txt holds 3
    usage: {input_tokens: 60, output_tokens: 6, cost: 2}
    reserve: 2
`

// A delegate call starts a child run on the same bus, named after the
// call, with its own instruction and a budget carved out of the parent's;
// the child's facts name the parent run and call, the parent's
// dispatch.completed carries the child's terminal state and answer, and
// the child's usage is charged exactly once: the parent's spend is the sum
// of the replies recorded in both runs, no more, no less. The child is no
// candidate: it seals nothing.
func TestAChildRunAnswersItsParentAndIsChargedOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	parent := `turns:
  - calls:
      - {id: ask, name: delegate, args: {instruction: "What does answer.txt hold?", budget: {steps: 3, cost: 20}}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 2}
    reserve: 3
  - text: the child says answer.txt holds 3
    usage: {input_tokens: 120, output_tokens: 12, cost: 3}
    reserve: 3
`
	e.startDelegating(fixtureCase(t, "{steps: 6, cost: 60}"), parent, childAnswers, "p1")
	log, end := e.wait("p1")
	child := "p1-d1-ask"
	clog, cend := e.wait(child)
	if end.Status != events.RunDone || cend.Status != events.RunDone {
		t.Fatalf("parent %s/%q, child %s/%q", end.Status, end.Reason, cend.Status, cend.Reason)
	}
	first := clog.Facts()[0]
	rd, ok := first.Body.(events.RunDelegated)
	if !ok || rd.Parent.Run != "p1" || rd.Parent.Turn != 1 || rd.Parent.CallID != "ask" || rd.Parent.OperationID != "p1/t1/ask" ||
		rd.Request.Budget.Steps != 3 || rd.Request.Budget.Cost != 20 {
		t.Fatalf("the child's first fact: %s %+v", first.Kind(), first.Body)
	}
	if n := len(kinds(clog, events.KindCandidateSealed)); n != 0 {
		t.Fatalf("the child sealed %d candidates", n)
	}
	var in events.DispatchIntended
	for _, f := range kinds(log, events.KindDispatchIntended) {
		in = f.Body.(events.DispatchIntended)
	}
	if in.Delegation == nil || in.Delegation.Run != child || in.Delegation.Steps != 3 || in.Delegation.Cost != 20 {
		t.Fatalf("the intent's reservation: %+v", in.Delegation)
	}
	done := settledDelegation(t, log)
	ci, co, cc := usageSum(t, clog)
	c := done.Child
	if c == nil || c.Run != child || c.Status != events.RunDone || c.Answer != "answer.txt holds 3" || c.Steps != 2 ||
		c.Usage == nil || c.Usage.InputTokens != ci || c.Usage.OutputTokens != co || *c.Usage.Cost != cc || c.Charged != cc {
		t.Fatalf("the child's outcome: %+v (its replies: %d+%d tokens, cost %d)", c, ci, co, cc)
	}
	if !strings.Contains(done.Output, "answer.txt holds 3") || done.Error != nil {
		t.Fatalf("what the parent's model read: %s %+v", done.Output, done.Error)
	}
	pi, po, pc := usageSum(t, log)
	if end.Spent.Tokens == nil || *end.Spent.Tokens != pi+po+ci+co || end.Spent.Cost == nil || *end.Spent.Cost != pc+cc || end.Steps != 2+2 {
		t.Fatalf("the parent spent %+v (steps %d); its replies %d+%d cost %d, the child's %d+%d cost %d", end.Spent, end.Steps, pi, po, pc, ci, co, cc)
	}
	if cend.Spent.Tokens == nil || *cend.Spent.Tokens != ci+co || *cend.Spent.Cost != cc {
		t.Fatalf("the child spent %+v", cend.Spent)
	}
}

// A child gets the parent's permissions or fewer, never more: a delegate
// call asking for a tool the parent is not offered, or for more budget
// than the parent has left, is rejected with a typed reason naming what,
// and no child run starts.
func TestADelegationDeniedByPermissionsStartsNoChild(t *testing.T) {
	t.Parallel()
	e := start(t)
	parent := `turns:
  - calls:
      - {id: more, name: delegate, args: {instruction: "deploy it", tools: [read_file, http_call]}}
      - {id: rich, name: delegate, args: {instruction: "spend it", budget: {cost: 500}}}
    usage: {input_tokens: 10, output_tokens: 1, cost: 1}
    reserve: 2
  - text: I could not delegate
    usage: {input_tokens: 10, output_tokens: 1, cost: 1}
    reserve: 2
`
	e.startDelegating(fixtureCase(t, "{steps: 6, cost: 60}"), parent, childAnswers, "p2")
	log, end := e.wait("p2")
	if end.Status != events.RunDone {
		t.Fatalf("the parent ended %s/%q", end.Status, end.Reason)
	}
	denied := map[events.CallID]string{}
	for _, f := range kinds(log, events.KindDispatchComplete) {
		b := f.Body.(events.DispatchCompleted)
		if b.Error == nil || b.Error.Code != tools.CodeDelegationDenied || b.Dispatch.Disposition != events.DispositionRejected || b.Child != nil {
			t.Fatalf("call %s settled %+v", b.Dispatch.CallID, b)
		}
		denied[b.Dispatch.CallID] = b.Error.Message
	}
	if !strings.Contains(denied["more"], `"http_call"`) || !strings.Contains(denied["rich"], "cost") {
		t.Fatalf("the reasons: %v", denied)
	}
	if n := len(kinds(log, events.KindDispatchIntended)); n != 0 {
		t.Fatalf("%d intents: nothing is reserved for a denied delegation", n)
	}
	for _, child := range []string{"p2-d1-more", "p2-d1-rich"} {
		clog, err := e.b.LoadRun(e.ctx, "suite", child)
		must(t, err)
		if len(clog.Records) != 0 {
			t.Fatalf("child %s has %d facts", child, len(clog.Records))
		}
	}
}

// Cancelling the parent cancels its children: the child, busy in a long
// command, ends cancelled naming its parent, and the parent's delegate
// call is settled with the child's cancelled end before the parent ends
// cancelled.
func TestAChildIsCancelledByItsParentsCancel(t *testing.T) {
	t.Parallel()
	e := start(t)
	parent := `turns:
  - calls:
      - {id: slow, name: delegate, args: {instruction: "wait a long time"}}
    usage: {input_tokens: 10, output_tokens: 1, cost: 1}
    reserve: 2
`
	child := `turns:
  - calls:
      - {id: long, name: run_command, args: {command: "sleep 300", timeout_seconds: 600}}
    usage: {input_tokens: 10, output_tokens: 1, cost: 1}
    reserve: 2
`
	e.startDelegating(fixtureCase(t, "{steps: 6}"), parent, child, "p3")
	e.waitFact("p3-d1-slow", func(f events.Fact) bool { return f.Kind() == events.KindDispatchIntended })
	must(t, e.b.Controls().Send(e.ctx, "suite", "p3", events.Control{Signal: events.SignalCancel, Reason: "operator stop"}))
	log, end := e.wait("p3")
	_, cend := e.wait("p3-d1-slow")
	if end.Status != events.RunCancelled || cend.Status != events.RunCancelled || !strings.Contains(cend.Reason, "parent p3") {
		t.Fatalf("parent %s/%q, child %s/%q", end.Status, end.Reason, cend.Status, cend.Reason)
	}
	done := settledDelegation(t, log)
	if done.Child == nil || done.Child.Status != events.RunCancelled {
		t.Fatalf("the parent's settlement of its child: %+v", done)
	}
}

// A parent taken over never runs a child that completed again: the
// delegate call's operation names the child, so the resumed parent finds
// its end and settles the call with it.
func TestAParentTakenOverFindsItsCompletedChild(t *testing.T) {
	t.Parallel()
	parentScript := `turns:
  - calls:
      - {id: ask, name: delegate, args: {instruction: "What does answer.txt hold?"}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 2}
    reserve: 3
  - text: done
    usage: {input_tokens: 10, output_tokens: 1, cost: 1}
    reserve: 3
`
	ctx := fleettest.Ctx(t)
	// The facts are written before the runner starts: the hook runs then.
	e := startTuned(t, nil, func(_ *runner.Service, b *bus.Bus) {
		c := fixtureCase(t, "{steps: 6, cost: 60}")
		p, err := fleettest.Publish(ctx, b, c, delegating(t, parentScript, childAnswers))
		must(t, err)
		must(t, fleettest.Request(ctx, b, "suite", "p4", p, 1))
		// The dead runner's work: the parent's first turn up to its intent,
		// and the child it started, which ended before anyone settled it.
		args := `{"instruction":"What does answer.txt hold?"}`
		call := events.ToolCall{ID: "ask", Name: "delegate", Args: args, ArgsDigest: events.DigestOf([]byte(args))}
		cost := uint64(2)
		ps := fleettest.NewSim(b, "suite", "p4")
		for i, body := range []events.Body{
			events.RunClaimed{Runner: "dead", Lease: 1},
			events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("req")), Reserve: 3},
			events.ModelReplied{Turn: 1, Provider: "scripted", Calls: []events.ToolCall{call}, Usage: &events.Usage{InputTokens: 100, OutputTokens: 10, Cost: &cost}},
			events.DispatchIntended{Turn: 1, CallID: "ask", Tool: "delegate", OperationID: "p4/t1/ask", ArgsDigest: call.ArgsDigest,
				Effect: events.EffectExternal, Delegation: &events.Delegation{Run: "p4-d1-ask", Steps: 2, Cost: 29}},
		} {
			must(t, ps.Commit(ctx, fmt.Sprint(i), events.OwnerRunner, body))
		}
		one := uint64(1)
		cs := fleettest.NewSim(b, "suite", "p4-d1-ask")
		for i, body := range []events.Body{
			events.RunDelegated{Request: events.RunRequested{Case: "fix", CaseDigest: p.CaseDigest, Treatment: "delegating",
				TreatmentDigest: p.TreatmentDigest, Trial: 1}, Parent: events.ParentRef{Run: "p4", Turn: 1, CallID: "ask", OperationID: "p4/t1/ask"}},
			events.RunClaimed{Runner: "dead", Lease: 1},
			events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("creq")), Reserve: 2},
			events.ModelReplied{Turn: 1, Provider: "scripted", Text: "the first child's answer", Usage: &events.Usage{InputTokens: 7, OutputTokens: 3, Cost: &one}},
			events.RunEnded{Status: events.RunDone, Reason: "done", Steps: 1},
		} {
			must(t, cs.Commit(ctx, fmt.Sprint(i), events.OwnerRunner, body))
		}
	})
	b := e.b
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", "p4")
	must(t, err)
	if end.Status != events.RunDone {
		t.Fatalf("the parent ended %s/%q", end.Status, end.Reason)
	}
	done := settledDelegation(t, log)
	if done.Child == nil || done.Child.Answer != "the first child's answer" || done.Child.Charged != 1 {
		t.Fatalf("the settlement: %+v", done.Child)
	}
	clog, err := b.LoadRun(ctx, "suite", "p4-d1-ask")
	must(t, err)
	if n, m := len(kinds(clog, events.KindRunClaimed)), len(kinds(clog, events.KindRunEnded)); n != 1 || m != 1 {
		t.Fatalf("the completed child was run again: %d claims, %d ends", n, m)
	}
	if end.Spent.Cost == nil || *end.Spent.Cost != 2+1+1 {
		t.Fatalf("the parent spent %+v", end.Spent)
	}
}

// A child that outlives its parent's runner is taken over like any run:
// its run.delegated is redelivered, and a runner claims it under a newer
// lease and drives it from its log to its end. One whose parent has ended
// before any runner took it is cancelled without running.
func TestAChildIsTakenOverLikeAnyRunUnlessItsParentEnded(t *testing.T) {
	t.Parallel()
	ctx := fleettest.Ctx(t)
	c := fixtureCase(t, "{steps: 6}")
	e := startTuned(t, nil, func(_ *runner.Service, b *bus.Bus) {
		p, err := fleettest.Publish(ctx, b, c, delegating(t, "turns: []\n", childAnswers))
		must(t, err)
		start := func(run, parent string, parentEnded bool) {
			ref := events.ParentRef{Run: parent, Turn: 1, CallID: "ask", OperationID: parent + "/t1/ask"}
			kase := cases.ChildCase(p.Case, "What does answer.txt hold?", []string{"read_file", "task_complete"}, cases.Budget{Steps: 3}, p.Case.FixtureDigest, ref)
			data, err := kase.Encode()
			must(t, err)
			cd, err := b.Blobs().Put(ctx, data)
			must(t, err)
			// The parent's log: claimed, and running or ended; no
			// run.requested, so that no runner takes the parent itself.
			ps := fleettest.NewSim(b, "suite", parent)
			must(t, ps.Commit(ctx, "claimed", events.OwnerRunner, events.RunClaimed{Runner: "dead", Lease: 1}))
			if parentEnded {
				must(t, ps.Commit(ctx, "ended", events.OwnerRunner, events.RunEnded{Status: events.RunCancelled, Reason: "cancelled"}))
			}
			cs := fleettest.NewSim(b, "suite", run)
			must(t, cs.Commit(ctx, "delegated", events.OwnerRunner, events.RunDelegated{Request: events.RunRequested{Case: "fix", CaseDigest: cd,
				Treatment: "delegating", TreatmentDigest: p.TreatmentDigest, Trial: 1, Budget: events.Budget{Steps: 3}}, Parent: ref}))
			if !parentEnded {
				// Its first runner claimed it and died.
				must(t, cs.Commit(ctx, "claimed", events.OwnerRunner, events.RunClaimed{Runner: "dead", Lease: 1}))
			}
		}
		start("orphan-d1-ask", "orphan", false)
		start("late-d1-ask", "late", true)
	})
	log, end := e.wait("orphan-d1-ask")
	claims := kinds(log, events.KindRunClaimed)
	if end.Status != events.RunDone || len(claims) != 2 || claims[1].Body.(events.RunClaimed).Lease != 2 {
		t.Fatalf("the orphaned child ended %s/%q after %d claims", end.Status, end.Reason, len(claims))
	}
	log, end = e.wait("late-d1-ask")
	if end.Status != events.RunCancelled || !strings.HasPrefix(end.Reason, "parent_ended") || len(kinds(log, events.KindRunClaimed)) != 0 ||
		len(kinds(log, events.KindTurnStarted)) != 0 {
		t.Fatalf("the child of an ended parent ended %s/%q", end.Status, end.Reason)
	}
}
