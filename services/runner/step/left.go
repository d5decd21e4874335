package step

import "github.com/factline/factline/events"

// Every call of a reply is settled, whatever ends the run: before its
// run.ended, the calls of the run's last reply that have no
// dispatch.completed are settled as Left says.

// LeftAct is how a call left open when the run ends is settled.
type LeftAct int

// The ways a call left open is settled.
const (
	// LeftSettled: the call has its dispatch.completed: nothing to do.
	LeftSettled LeftAct = iota + 1
	// LeftNotRun: the call never started: not_run, nothing applied.
	LeftNotRun
	// LeftInterrupted: a workspace call was intended and never settled:
	// it was in flight when its attempt ended (canceled, nothing applied:
	// the workspace is the last settled one).
	LeftInterrupted
	// LeftInFlight: an external effect was intended and never settled: it
	// may have reached its sink. Its outcome is unknown unless the status
	// lookup can tell (Found).
	LeftInFlight
	// LeftChild: a delegate call was intended and never settled: its
	// child may still run. The runner cancels it, and settles the call
	// with the child's outcome where the child has ended, canceled
	// otherwise.
	LeftChild
)

// Left is how one call left open when the run ends is settled. Only this
// package makes one: its fields are unexported, and the runner's guard
// test refuses a literal of it anywhere else.
type Left struct {
	act     LeftAct
	in      events.DispatchIntended
	outcome string
	found   bool
	// wait is how long to wait before the lookup is made again.
	wait Nanos
}

// PlanLeft decides how the call id of p's reply is settled as the run
// ends.
func PlanLeft(p Progress, id events.CallID) Left {
	if _, ok := p.Completed[id]; ok {
		return Left{act: LeftSettled}
	}
	in, ok := p.Intended[id]
	switch {
	case !ok:
		return Left{act: LeftNotRun}
	case in.Delegation != nil:
		return Left{act: LeftChild, in: in}
	case in.Effect.IsEffect():
		return Left{act: LeftInFlight, in: in, outcome: events.OutcomeUnknown}
	}
	return Left{act: LeftInterrupted, in: in}
}

// Act is how the call is settled.
func (l Left) Act() LeftAct { return l.act }

// Intended is the call's dispatch.intended (LeftInterrupted, LeftInFlight,
// LeftChild).
func (l Left) Intended() events.DispatchIntended { return l.in }

// Disposition is what its dispatch records of how it ran.
func (l Left) Disposition() events.Disposition {
	if l.act == LeftNotRun {
		return events.DispositionNotRun
	}
	return events.DispositionCanceled
}

// Mutation is what its dispatch records of its effect on the workspace:
// not applicable to an external effect (its workspace writes, if any,
// went with the attempt's workspace), not applied otherwise.
func (l Left) Mutation() events.Mutation {
	if l.act == LeftInFlight || l.act == LeftChild {
		return events.MutationNotApplicable
	}
	return events.MutationNotApplied
}

// Outcome is the outcome its dispatch records: unknown for an effect in
// flight until a lookup finds it, "" for a workspace call.
func (l Left) Outcome() string { return l.outcome }

// Looked says a lookup found what became of an effect in flight.
func (l Left) Looked() bool { return l.found }

// Wait is how long the runner waits before it makes the status lookup
// again: one that found the effect not applied within its settle window
// proves nothing yet. Zero: the call is settled as it stands.
func (l Left) Wait() Nanos { return l.wait }

// Found is a LeftInFlight call once the status lookup found f, made
// where s says against the effect's settle window: applied or not
// applied when it could tell, still unknown when not; found not applied
// within the window, it is looked up again once the window has passed
// (Wait).
func (l Left) Found(f Finding, s Settling) Left {
	l.wait = 0
	if l.act != LeftInFlight || f == FoundNothing {
		return l
	}
	if w := s.wait(); f == FoundNotApplied && w > 0 {
		l.wait = w
		return l
	}
	l.outcome, l.found = f.Outcome(), true
	return l
}
