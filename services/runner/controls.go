package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/step"
)

// controls collects the control signals sent to a run. Signals are requests:
// the attempt accepts them at safe points and commits control.accepted.
// Cancel is the exception in timing only: it also stops the work in flight
// at once (the model call or the command), and is accepted right after.
type controls struct {
	mu        sync.Mutex
	cancel    *events.Control
	steers    []events.Control
	approvals map[string][]events.Control // by operation ID
	resolved  map[string]events.Control   // resolutions, by operation ID
	accepted  map[string]bool             // control IDs already accepted (from the log)
	got       map[string]bool             // signal/ID of every signal taken in
	wake      chan struct{}
	stopWork  context.CancelFunc
}

func newControls(stopWork context.CancelFunc) *controls {
	return &controls{approvals: map[string][]events.Control{}, resolved: map[string]events.Control{}, accepted: map[string]bool{}, got: map[string]bool{},
		wake: make(chan struct{}, 1), stopWork: stopWork}
}

// watch feeds signals from ch until it closes.
func (c *controls) watch(ch <-chan events.Control) {
	for sig := range ch {
		c.add(sig)
	}
}

// catchUpWait bounds how long a run waits, before its first turn, for
// its watch to deliver the signals sent before it was taken: a CONTROL
// stream that is missing is never caught up with, and the run goes on
// without signals then (docs/operations.md#a-stream-missing).
const catchUpWait = 10 * time.Second

// catchUp takes in the signals sent before the run was taken (a cancel
// while it queued, a steer), so that its first turn sees them: left to
// the watch alone, they arrived beside that turn, after a model call or a
// command had begun. It returns once the watch has caught up (caughtUp
// closed and what it put on sigs before taken in), or after catchUpWait.
func (c *controls) catchUp(ctx context.Context, log *slog.Logger, sigs <-chan events.Control, caughtUp <-chan struct{}) {
	timer := time.NewTimer(catchUpWait)
	defer timer.Stop()
	for {
		select {
		case sig, ok := <-sigs:
			if !ok {
				return
			}
			c.add(sig)
		case <-caughtUp:
			// Everything put on sigs before caughtUp closed is in its
			// buffer or taken in already; what comes later is the
			// watch's. A closed channel still yields its buffer.
			for range len(sigs) {
				c.add(<-sigs)
			}
			return
		case <-timer.C:
			log.Warn("the run's control signals could not be read before its first turn; they are taken in when they arrive", "waited", catchUpWait)
			return
		case <-ctx.Done():
			return
		}
	}
}

// add takes in one signal; one taken in before (the signals stored when
// the run was taken, which its watch then delivers again) is ignored.
func (c *controls) add(sig events.Control) {
	c.mu.Lock()
	key := string(sig.Signal) + "/" + sig.ID
	if c.got[key] {
		c.mu.Unlock()
		return
	}
	c.got[key] = true
	switch sig.Signal {
	case events.SignalCancel:
		if c.cancel == nil && !c.accepted[sig.ID] {
			s := sig
			c.cancel = &s
			c.stopWork()
		}
	case events.SignalSteer:
		if !c.accepted[sig.ID] {
			c.steers = append(c.steers, sig)
		}
	case events.SignalApprove, events.SignalReject:
		c.approvals[sig.Operation] = append(c.approvals[sig.Operation], sig)
	case events.SignalResolve:
		c.resolved[sig.Operation] = sig
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// seen marks controls the log says were accepted already (a takeover).
func (c *controls) seen(facts []events.Fact) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range facts {
		if ca, ok := f.Body.(events.ControlAccepted); ok {
			c.accepted[ca.Control.ID] = true
		}
	}
	kept := c.steers[:0]
	for _, s := range c.steers {
		if !c.accepted[s.ID] {
			kept = append(kept, s)
		}
	}
	c.steers = kept
}

// wakeup is closed-or-signalled when a signal arrives (nil controls: never).
func (c *controls) wakeup() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.wake
}

func (c *controls) pendingCancel() *events.Control {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cancel
}

func (c *controls) takeSteers() []events.Control {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.steers
	c.steers = nil
	return out
}

// acceptCancel commits the acceptance of a cancel and ends the run. Nothing
// the attempt does after this is an effect.
func (a *attempt) acceptCancel(ctx context.Context, sig *events.Control) (step.Ending, error) {
	if _, err := a.commit(ctx, key(sig.ID), events.ControlAccepted{
		Control: events.ControlRef{ID: sig.ID, Signal: events.SignalCancel}, Reason: sig.Reason,
	}); err != nil {
		return step.Ending{}, err
	}
	reason := "cancelled"
	if sig.Reason != "" {
		reason += ": " + sig.Reason
	}
	return step.Ending{Status: events.RunCancelled, Reason: reason}, nil
}

// acceptSteers starts a new task generation for each steer: the
// instruction joins the model's context and completion evidence from older
// generations is stale. Once the run's finish is decided no steer is taken
// in: it stays unaccepted, and `factline steer` says so.
func (a *attempt) acceptSteers(ctx context.Context, gen uint32) (int, error) {
	steers := a.ctl.takeSteers()
	for i, s := range steers {
		if _, err := a.commit(ctx, key(s.ID), events.ControlAccepted{
			Control: events.ControlRef{ID: s.ID, Signal: events.SignalSteer}, Instruction: s.Instruction,
		}); err != nil {
			if errors.Is(err, errFinishDecided) {
				for _, late := range steers[i:] {
					a.svc.log.Warn("steer not accepted: the run's finish was decided first", "suite", a.suite, "run", a.run, "control", late.ID)
				}
				return i, nil
			}
			return 0, err
		}
		gen++
		a.gen = gen
		if _, err := a.commit(ctx, key(gen), events.TaskGenerationStarted{
			Generation: gen, Instruction: s.Instruction, Control: s.ID,
		}); err != nil {
			return 0, err
		}
	}
	return len(steers), nil
}

// approval is a person's decision on an operation.
type approval struct {
	approved bool
	sig      events.Control
	timedOut bool // no person decided: the runner's own rejection
}

// key is the message ID key of the decision's control.accepted: the
// signal's ID, or, for the runner's own rejection after the approval
// timeout, a key no signal ID can take (two parts).
func (d approval) key() []string {
	if d.timedOut {
		return key("timeout", d.sig.Operation)
	}
	return key(d.sig.ID)
}

// awaitApproval waits for a person to approve or reject an operation. An
// approval counts only for the exact arguments it names; one for other
// arguments is not an approval. Cancel ends the wait. So does the end of
// the run's wall-time budget, with the runner's own rejection: a call
// approved after it could not run (what runs is bounded by what is left
// of the budget), and a person would be asked for nothing.
func (a *attempt) awaitApproval(ctx context.Context, op string, args events.Digest) (approval, bool) {
	limit := time.NewTimer(a.svc.approvalTimeout)
	defer limit.Stop()
	var wallOut <-chan time.Time
	if wall := a.kase.Budget.Wall.Std(); wall > 0 {
		left := time.NewTimer(max(wall-a.wallUsed(), 0))
		defer left.Stop()
		wallOut = left.C
	}
	a.status("awaiting_approval", map[string]any{"operation": op, "args_digest": args})
	for {
		a.ctl.mu.Lock()
		for _, sig := range a.ctl.approvals[op] {
			if sig.Signal == events.SignalReject {
				a.ctl.mu.Unlock()
				return approval{approved: false, sig: sig}, true
			}
			if sig.ArgsDigest == args {
				a.ctl.mu.Unlock()
				return approval{approved: true, sig: sig}, true
			}
			a.svc.log.Warn("approval ignored: it names other arguments", "operation", op, "approved", sig.ArgsDigest, "call", args)
		}
		a.ctl.approvals[op] = nil
		a.ctl.mu.Unlock()
		if a.ctl.pendingCancel() != nil {
			return approval{}, false
		}
		select {
		case <-a.ctl.wake:
		case <-limit.C:
			return approval{sig: events.Control{ID: "timeout-" + op, Signal: events.SignalReject, Operation: op,
				Reason: "no approval within " + a.svc.approvalTimeout.String()}, timedOut: true}, true
		case <-wallOut:
			return approval{sig: events.Control{ID: "timeout-" + op, Signal: events.SignalReject, Operation: op,
				Reason: "the run's wall-time budget of " + a.kase.Budget.Wall.Std().String() + " ran out while the call waited for approval"}, timedOut: true}, true
		case <-ctx.Done():
			return approval{}, false
		}
	}
}

// status publishes the run's live status; it may be lost, nothing depends
// on it.
func (a *attempt) status(phase string, extra map[string]any) {
	st := map[string]any{"runner": a.svc.instance, "phase": phase, "at": time.Now().UTC()}
	for k, v := range extra {
		st[k] = v
	}
	_ = a.svc.bus.Controls().PublishStatus(a.suite, a.run, st)
}

// awaitResolution waits for a person to say whether an operation of unknown
// outcome took effect. It reports false when nobody did in time (or the run
// was cancelled): the run then ends for a person.
func (a *attempt) awaitResolution(ctx context.Context, op string) (events.Control, bool) {
	a.status("awaiting_resolution", map[string]any{"operation": op})
	limit := time.NewTimer(a.svc.approvalTimeout)
	defer limit.Stop()
	for {
		a.ctl.mu.Lock()
		sig, ok := a.ctl.resolved[op]
		a.ctl.mu.Unlock()
		if ok {
			return sig, true
		}
		if a.ctl.pendingCancel() != nil {
			return events.Control{}, false
		}
		select {
		case <-a.ctl.wake:
		case <-limit.C:
			return events.Control{}, false
		case <-ctx.Done():
			return events.Control{}, false
		}
	}
}
