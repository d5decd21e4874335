package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/step"
	"github.com/factline/factline/services/runner/tools"
)

// childCancelWait bounds how long a parent waits for a child it cancelled
// to end: a child no runner has taken yet ends cancelled when one takes
// it, and the parent does not wait for that.
const childCancelWait = 30 * time.Second

// ReasonParentEnded ends a child whose parent had ended before any runner
// took the child: it is cancelled without running.
const ReasonParentEnded = "parent_ended"

// delegate carries out a delegate call (step.PlanDelegate): it decides the
// child's grant, commits the intent reserving it, starts the child run on
// the bus (or finds it: its run ID is the operation's, so a takeover never
// starts a second one), waits for the child's end and settles the call with
// the child's outcome. A pending cancel of the parent, or its wall time
// running out, is passed on to the child, whose end then settles the call.
func (a *attempt) delegate(ctx context.Context, p step.Progress, call events.ToolCall, t callTool) (settled, error) {
	var args tools.DelegateArgs
	raw := t.args
	if raw == nil {
		// An earlier attempt intended the call: its arguments are the
		// reply's, whatever the registry says of them now.
		raw = json.RawMessage(call.Args)
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return settled{}, fmt.Errorf("%w: delegate call %s: arguments: %v", errBadInput, call.ID, err)
	}
	in, intended := p.Intended[call.ID]
	if !intended || in.Delegation == nil {
		log, err := a.view(ctx)
		if err != nil {
			return settled{}, err
		}
		ask := step.DelegateAsk{Tools: args.Tools}
		if b := args.Budget; b != nil {
			ask.Steps, ask.InputTokens, ask.OutputTokens, ask.Cost, ask.WallMillis = b.Steps, b.InputTokens, b.OutputTokens, b.Cost, b.WallSeconds*1000
		}
		parent := step.DelegateParent{Offered: a.offered, Budget: budgetOf(a.kase.Budget), Spend: step.Tally(log.Facts())}
		if wall := a.kase.Budget.Wall.Std(); wall > 0 {
			parent.WallMillis = uint64(wall.Milliseconds())
			parent.WallLeft = uint64(max(wall-a.wallUsed(), 0).Milliseconds())
		}
		grant, _, denied := step.Delegate(ask, parent, step.ChildRun(a.run, p.Turn, call.ID))
		if denied != nil {
			d := events.CompletedDispatch{CallID: call.ID, EvidenceRef: step.EvidenceRef(p.Turn, call.ID), Tool: call.Name,
				Disposition: events.DispositionRejected, Mutation: events.MutationNotApplicable, Verification: events.NotVerifier(),
				Digest: a.ws.Digest()}
			return settled{dispatch: d}, a.settle(ctx, p.Turn, d, tools.Fail(tools.CodeDelegationDenied, "%s", denied.Error()))
		}
		in = events.DispatchIntended{Turn: p.Turn, CallID: call.ID, Tool: call.Name, OperationID: a.operation(p.Turn, call.ID),
			ArgsDigest: call.ArgsDigest, Effect: t.view.Effect, Delegation: &grant}
		if _, err := a.commit(ctx, key(p.Turn, call.ID), in); err != nil {
			return settled{}, err
		}
	}
	if err := a.startChild(ctx, in, args); err != nil {
		return settled{}, err
	}
	out, ok, err := a.awaitChild(ctx, in.Delegation.Run)
	if err != nil {
		return settled{}, err
	}
	return a.settleChild(ctx, in, out, ok)
}

// settleChild settles a delegate call with its child's outcome (ok), or,
// where the child did not end in time after its cancel, as interrupted.
func (a *attempt) settleChild(ctx context.Context, in events.DispatchIntended, out events.ChildOutcome, ok bool) (settled, error) {
	d := events.CompletedDispatch{CallID: in.CallID, EvidenceRef: step.EvidenceRef(in.Turn, in.CallID), Tool: in.Tool,
		Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.NotVerifier()}
	if a.ws != nil {
		// An attempt that only ends a run given up has no workspace.
		d.Digest = a.ws.Digest()
	}
	var res tools.Result
	if !ok {
		d.Disposition = events.DispositionCanceled
		res = tools.Fail(CodeInterrupted, "child run %s was cancelled and did not end within %v; what it spent is charged when it ends", in.Delegation.Run, childCancelWait)
	} else {
		res.Output = fmt.Sprintf("child run %s ended %s (%s) after %d turns:\n%s", out.Run, out.Status, out.Reason, out.Steps, out.Answer)
		if out.Status != events.RunDone {
			res.Err = &events.ToolError{Code: tools.CodeChildUnfinished, Message: fmt.Sprintf("child run %s ended %s: %s", out.Run, out.Status, out.Reason)}
		}
	}
	res = redactResult(a.svc.secrets, res)
	var child *events.ChildOutcome
	if ok {
		child = &out
	}
	_, err := a.commit(ctx, key(in.Turn, in.CallID), events.DispatchCompleted{
		Turn: in.Turn, Dispatch: d, Output: res.Observation(), Error: res.Err, Child: child,
	})
	return settled{dispatch: d}, err
}

// startChild commits the child's run.delegated unless its log holds it
// already (a takeover of the parent, or a commit retried). The child's
// case is the parent's narrowed (cases.ChildCase): the call's instruction,
// the tools granted, the budget reserved and the parent's workspace as it
// is now, sealed and stored so that any runner can take the child.
func (a *attempt) startChild(ctx context.Context, in events.DispatchIntended, args tools.DelegateArgs) error {
	child := in.Delegation.Run
	log, err := a.svc.bus.LoadRun(ctx, a.suite, child)
	if err != nil {
		return fmt.Errorf("child %s: %w", child, err)
	}
	if len(log.Records) > 0 {
		return nil
	}
	granted, denied := step.ChildTools(args.Tools, a.offered)
	if denied != nil {
		// The grant was decided on these tools when the intent was
		// committed; only a changed treatment could make them differ.
		return fmt.Errorf("%w: child %s: %v", errBadInput, child, denied)
	}
	fixture, _, err := a.ws.Seal(ctx)
	if err != nil {
		return fmt.Errorf("child %s: seal the parent's workspace: %w", child, err)
	}
	g := *in.Delegation
	budget := cases.Budget{Steps: g.Steps, InputTokens: g.InputTokens, OutputTokens: g.OutputTokens, Cost: g.Cost,
		Wall: cases.Duration(time.Duration(g.WallMillis) * time.Millisecond)}
	ref := events.ParentRef{Run: a.run, Turn: in.Turn, CallID: in.CallID, OperationID: in.OperationID}
	kase := cases.ChildCase(a.kase, args.Instruction, granted, budget, fixture, ref)
	data, err := kase.Encode()
	if err != nil {
		return fmt.Errorf("child %s: %w", child, err)
	}
	caseDigest, err := a.svc.bus.Blobs().Put(ctx, data)
	if err != nil {
		return fmt.Errorf("child %s: store its case: %w", child, err)
	}
	req := events.RunRequested{Case: a.requested.Case, CaseDigest: caseDigest, Treatment: a.requested.Treatment,
		TreatmentDigest: a.requested.TreatmentDigest, Trial: max(a.requested.Trial, 1),
		Budget: events.Budget{Steps: g.Steps, Tokens: g.InputTokens + g.OutputTokens, Seconds: uint32(g.WallMillis / 1000), Cost: g.Cost}}
	_, err = a.svc.bus.Commit(ctx, nil, a.suite, child, func(log bus.RunLog) ([]bus.Pending, error) {
		if len(log.Records) > 0 {
			return nil, nil // started already
		}
		f, err := events.NewFact(events.Meta{Suite: a.suite, Run: child, TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerRunner, Instance: a.svc.instance}},
			events.RunDelegated{Request: req, Parent: ref})
		if err != nil {
			return nil, err
		}
		return []bus.Pending{{Fact: f, MsgID: events.MessageID(child, events.KindRunDelegated)}}, nil
	})
	if err != nil {
		return fmt.Errorf("start child %s: %w", child, err)
	}
	a.svc.log.Info("delegated to a child run", "suite", a.suite, "run", a.run, "child", child)
	return nil
}

// awaitChild waits for a child run's end and returns its outcome. A
// pending cancel of the parent is passed on to the child, and so is the
// parent's wall time running out and a child no runner took within the
// decision timeout; once it was cancelled the parent waits at most
// childCancelWait for its end (ok false: it did not end in time). ctx
// ending hands the parent back: the child goes on, and the parent's next
// attempt finds it.
func (a *attempt) awaitChild(ctx context.Context, child string) (events.ChildOutcome, bool, error) {
	wake, stop, err := a.svc.bus.WakeOn(a.suite, child, events.KindRunEnded)
	if err != nil {
		return events.ChildOutcome{}, false, fmt.Errorf("watch child %s: %w", child, err)
	}
	defer stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	began := time.Now()
	var cancelled time.Time
	for {
		log, err := a.svc.bus.LoadRun(ctx, a.suite, child)
		if err != nil {
			return events.ChildOutcome{}, false, fmt.Errorf("child %s: %w", child, err)
		}
		facts := log.Facts()
		if out, ok, err := a.childOutcomeOf(ctx, child, facts); err != nil || ok {
			return out, ok, err
		}
		if cancelled.IsZero() {
			reason := ""
			switch {
			case a.ctl.pendingCancel() != nil:
				reason = "its parent " + a.run + " was cancelled"
			case a.wallSpent():
				reason = "its parent " + a.run + " ran out of wall time"
			case !claimed(facts) && time.Since(began) > a.svc.decisionTimeout:
				reason = fmt.Sprintf("no runner took it within %v", a.svc.decisionTimeout)
			}
			if reason != "" {
				if err := a.cancelChild(ctx, child, reason); err != nil {
					return events.ChildOutcome{}, false, err
				}
				cancelled = time.Now()
			}
		} else if time.Since(cancelled) > childCancelWait {
			return events.ChildOutcome{}, false, nil
		}
		select {
		case <-wake:
		case <-a.ctl.wakeup():
		case <-tick.C:
		case <-ctx.Done():
			return events.ChildOutcome{}, false, ctx.Err()
		}
	}
}

// cancelChild sends a child run a cancel naming why.
func (a *attempt) cancelChild(ctx context.Context, child, reason string) error {
	a.svc.log.Info("cancelling a child run", "suite", a.suite, "run", a.run, "child", child, "reason", reason)
	if err := a.svc.bus.Controls().Send(ctx, a.suite, child, events.Control{Signal: events.SignalCancel, Reason: reason}); err != nil {
		return fmt.Errorf("cancel child %s: %w", child, err)
	}
	return nil
}

// settleChildLeft settles a delegate call left open as the parent ends
// (step.LeftChild): its child is cancelled, and the call is settled with
// the child's outcome once it ended (or as interrupted, when it does not
// end in time).
func (a *attempt) settleChildLeft(ctx context.Context, in events.DispatchIntended, end step.Ending) error {
	child := in.Delegation.Run
	log, err := a.svc.bus.LoadRun(ctx, a.suite, child)
	if err != nil {
		return fmt.Errorf("child %s: %w", child, err)
	}
	out, ok, err := a.childOutcomeOf(ctx, child, log.Facts())
	if err != nil {
		return err
	}
	if !ok {
		if err := a.cancelChild(ctx, child, fmt.Sprintf("its parent %s ended %s (%s)", a.run, end.Status, end.Reason)); err != nil {
			return err
		}
		wait, cancel := context.WithTimeout(ctx, childCancelWait)
		defer cancel()
		_, _, err := fleetWaitEnded(wait, a.svc.bus, a.suite, child)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if log, err = a.svc.bus.LoadRun(ctx, a.suite, child); err != nil {
			return fmt.Errorf("child %s: %w", child, err)
		}
		if out, ok, err = a.childOutcomeOf(ctx, child, log.Facts()); err != nil {
			return err
		}
	}
	_, err = a.settleChild(ctx, in, out, ok)
	return err
}

// fleetWaitEnded waits until a run has ended or ctx ends.
func fleetWaitEnded(ctx context.Context, b *bus.Bus, suite, run string) (bus.RunLog, bool, error) {
	wake, stop, err := b.WakeOn(suite, run, events.KindRunEnded)
	if err != nil {
		return bus.RunLog{}, false, err
	}
	defer stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return log, false, err
		}
		for _, r := range log.Records {
			if _, ok := r.Fact.Body.(events.RunEnded); ok {
				return log, true, nil
			}
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-ctx.Done():
			return log, false, ctx.Err()
		}
	}
}

// claimed says a run's facts hold a claim.
func claimed(facts []events.Fact) bool {
	for _, f := range facts {
		if _, ok := f.Body.(events.RunClaimed); ok {
			return true
		}
	}
	return false
}

// parentEnded says whether a child's parent run has ended: a child no
// runner took before then never runs.
func (s *Service) parentEnded(ctx context.Context, suite string, parent events.ParentRef) (bool, error) {
	log, err := s.bus.LoadRun(ctx, suite, parent.Run)
	if err != nil {
		return false, err
	}
	return log.Ended(), nil
}

// childOutcomeOf is step.ChildOutcomeOf with the child's replies read
// whole once it has ended: its answer may be a text kept in a blob.
func (a *attempt) childOutcomeOf(ctx context.Context, child string, facts []events.Fact) (events.ChildOutcome, bool, error) {
	if _, ok := step.ChildOutcomeOf(child, facts); !ok {
		return events.ChildOutcome{}, false, nil
	}
	full, err := a.resolveReplies(ctx, facts)
	if err != nil {
		return events.ChildOutcome{}, false, fmt.Errorf("child %s: %w", child, err)
	}
	out, ok := step.ChildOutcomeOf(child, full)
	return out, ok, nil
}
