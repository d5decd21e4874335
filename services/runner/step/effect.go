package step

import (
	"fmt"

	"github.com/factline/factline/events"
)

// An external effect's call (PlanSend, PlanReconcile) is settled in steps
// the runner takes one at a time: it confirms its hold on the run, sends
// the operation, looks for its outcome, asks a person, and settles it.
// After each step the runner tells Effect what happened and Effect says
// what comes next, and how long to wait before it, until a step settles
// the call or hands the run back. What the runner learns on the way (the
// notes of lookups and people, a lost answer's error) is its own to write
// into the observation; what it does next, and when, is decided here: the
// fence's verdict on a send (maySend) and how long a lookup that finds
// nothing proves nothing (notFoundWait) included.

// MaxSends bounds how often one operation is sent: the first send, and
// sends again under the same operation ID once its outcome was found not
// applied or its sink deduplicates by key.
const MaxSends = 3

// Finding is what looking for an operation's outcome found: a status
// lookup (believed only past the settle window when it finds nothing:
// notFoundWait), or a person's resolution.
type Finding int

// The findings.
const (
	// FoundNothing: nothing could tell (no lookup declared, the lookup
	// failed or answered something else, nobody resolved it).
	FoundNothing Finding = iota
	// FoundApplied: the operation took effect.
	FoundApplied
	// FoundNotApplied: it did not: it may be sent again.
	FoundNotApplied
)

// Outcome is the outcome a dispatch records on the finding.
func (f Finding) Outcome() string {
	switch f {
	case FoundApplied:
		return events.OutcomeApplied
	case FoundNotApplied:
		return events.OutcomeNotApplied
	}
	return events.OutcomeUnknown
}

// Effect is what the runner knows of one external operation it is
// settling when it asks what comes next.
type Effect struct {
	// Offered says the tool is still offered, with arguments its schema
	// takes: the operation can be sent.
	Offered bool
	// Dedupes says the sink deduplicates by the operation ID (the case's
	// http.dedupe): a send again under it cannot double the effect.
	Dedupes bool
	// Sends is how often this attempt sent the operation.
	Sends int
	// Cancel says a cancel is pending: nothing more is sent.
	Cancel bool
	// Settling is where a status lookup of the operation stands against
	// its settle window, measured when the runner asks.
	Settling Settling
}

// Settling is where a status lookup of an operation stands against its
// settle window: how long ago quiet was, the moment after which no request
// of the operation can still be on its way to the sink (negative before
// it), and the window after quiet in which a slow sink may still apply one
// (the case's http.settle).
type Settling struct {
	// SinceQuiet is the time since quiet, negative before it.
	SinceQuiet Nanos
	// Window is the settle window.
	Window Nanos
}

// wait is how much longer a lookup that finds the operation not applied
// proves nothing.
func (s Settling) wait() Nanos { return notFoundWait(s.SinceQuiet, s.Window) }

// EffectAct is what the runner does next with an external operation.
type EffectAct int

// The steps of settling an external operation.
const (
	// EffectFence: a send is due. Once the step's Wait has passed (a
	// backoff spacing sends again), the runner confirms its hold on the
	// run (the server confirms an in-progress ack, a read from the stream
	// leader finds its claim the newest) and says what it found. Then
	// AfterFence.
	EffectFence EffectAct = iota + 1
	// EffectSend: the fence holds: the send starts now, under the
	// operation ID. Then AfterSend.
	EffectSend
	// EffectHandBack: the fence does not hold (Refusal says why): nothing
	// is sent, and the run is handed back, to be resumed from the log,
	// where the operation is reconciled like any other intended and never
	// settled.
	EffectHandBack
	// EffectLookup: the case's status lookup, once the step's Wait has
	// passed: a lookup that found the operation not applied within its
	// settle window is made again once the window has passed. Then
	// AfterLookup.
	EffectLookup
	// EffectAskPerson: wait for a person to resolve the operation (and
	// commit the resolution as control.accepted). Then AfterPerson.
	EffectAskPerson
	// EffectLook: a send was interrupted in flight (a cancel, the
	// wall-time budget): only a look, which has no effect, may still
	// settle it; made again, like a lookup, once the step's Wait has
	// passed. Then AfterLook.
	EffectLook
	// EffectSettleFound: a lookup or a person found the operation took
	// effect: settled applied, not sent again.
	EffectSettleFound
	// EffectSettleNotSent: it was found not applied but may not be sent
	// again (sent too often, no longer offered, a cancel pending): settled
	// not applied, and the run goes on.
	EffectSettleNotSent
	// EffectSettleUnknown: nothing could establish the outcome: settled
	// unknown. Unless the send was interrupted (the cancel or the budget
	// then ends the run, naming the operation), the run ends for a person
	// (EndsRun).
	EffectSettleUnknown
	// EffectSettleAnswer: the sink's answer says the outcome: settled with
	// it.
	EffectSettleAnswer
	// EffectSettleLooked: the look after an interrupted send found the
	// outcome: settled with it, the send's disposition canceled.
	EffectSettleLooked
)

// EffectStep is the next step of settling an external operation. Only
// this package makes one: its fields are unexported, and the runner's
// guard test refuses a literal of it anywhere else.
type EffectStep struct {
	act EffectAct
	// outcome is the outcome a settling step records.
	outcome string
	// interrupted says the send was stopped in flight: its dispatch is
	// canceled, and an unknown outcome does not end the run by itself.
	interrupted bool
	// wait is how long the runner waits before it takes the step.
	wait Nanos
	// why is why the fence does not hold (EffectHandBack).
	why string
}

// Act is what the runner does next.
func (s EffectStep) Act() EffectAct { return s.act }

// Outcome is the outcome a settling step's dispatch records.
func (s EffectStep) Outcome() string { return s.outcome }

// Interrupted says the operation's send was stopped in flight: its
// dispatch's disposition is canceled.
func (s EffectStep) Interrupted() bool { return s.interrupted }

// Wait is how long the runner waits before it takes the step: a backoff
// before a send again (EffectFence), the rest of the settle window before
// a lookup or look made again (EffectLookup, EffectLook); zero otherwise.
func (s EffectStep) Wait() Nanos { return s.wait }

// Refusal is why the fence does not hold (EffectHandBack), "" otherwise.
func (s EffectStep) Refusal() string { return s.why }

// EndsRun says settling the operation ends the run for a person: its
// outcome is unknown and nothing else (a cancel, the budget) ends the run.
func (s EffectStep) EndsRun() bool { return s.act == EffectSettleUnknown && !s.interrupted }

// String names the step, for logs and tests.
func (s EffectStep) String() string {
	name := map[EffectAct]string{EffectFence: "confirm the hold", EffectSend: "send", EffectHandBack: "hand the run back",
		EffectLookup: "status lookup", EffectAskPerson: "ask a person",
		EffectLook: "look only", EffectSettleFound: "settle as found", EffectSettleNotSent: "settle not sent again",
		EffectSettleUnknown: "settle unknown", EffectSettleAnswer: "settle with the answer", EffectSettleLooked: "settle as looked"}[s.act]
	if name == "" {
		return fmt.Sprintf("no step (act %d)", s.act)
	}
	if s.outcome != "" {
		name += " " + s.outcome
	}
	if s.interrupted {
		name += " (interrupted)"
	}
	if s.wait > 0 {
		name += " after " + span(s.wait)
	}
	if s.why != "" {
		name += ": " + s.why
	}
	return name
}

// Begin is the first step: a send when no attempt sent the operation yet
// (PlanSend), a lookup when an earlier attempt may have (PlanReconcile):
// whoever sent it did so before this attempt began, and gave up on it
// within the tool's timeout.
func (e Effect) Begin(mayHaveRun bool) EffectStep {
	if mayHaveRun {
		return EffectStep{act: EffectLookup}
	}
	return e.fence()
}

// fence is the step of a send due now: after the backoff of the sends so
// far, the fence.
func (e Effect) fence() EffectStep { return EffectStep{act: EffectFence, wait: backoff(e.Sends)} }

// backoff spaces sends of one operation: the first goes at once, each
// send again a quarter second later than the last, at most two seconds.
func backoff(sends int) Nanos { return min(Nanos(sends)*250*Millisecond, 2*Second) }

// AfterFence is the step after the runner confirmed its hold on the run
// as h says: the send starts now if the fence holds (maySend), and
// otherwise nothing is sent and the run is handed back.
func (e Effect) AfterFence(h Hold) EffectStep {
	if why := maySend(h); why != "" {
		return EffectStep{act: EffectHandBack, why: why}
	}
	return EffectStep{act: EffectSend}
}

// AfterLookup is the step after a status lookup found f. One that found
// the operation not applied within its settle window proves nothing yet:
// it is made again once the window has passed. A lookup that found
// nothing is followed by a send again under the same key where the sink
// deduplicates by it, and otherwise by a person's finding.
func (e Effect) AfterLookup(f Finding) EffectStep {
	if w := e.Settling.wait(); f == FoundNotApplied && w > 0 {
		return EffectStep{act: EffectLookup, wait: w}
	}
	if f != FoundNothing {
		return e.found(f, false)
	}
	if e.Dedupes {
		return e.found(FoundNothing, true)
	}
	return EffectStep{act: EffectAskPerson}
}

// AfterPerson is the step after a person's resolution found f (nothing:
// nobody resolved it in time, or a cancel ended the wait).
func (e Effect) AfterPerson(f Finding) EffectStep { return e.found(f, false) }

// found is the step after reconciling found f; resend says the sink
// deduplicates, so that a send again is safe although nothing was found.
// A found effect is settled; one not found is sent again, unless it may
// not be (sent MaxSends times already, no longer offered, a cancel
// pending): then one known not applied is settled so, and anything else
// unknown.
func (e Effect) found(f Finding, resend bool) EffectStep {
	switch {
	case f == FoundApplied:
		return EffectStep{act: EffectSettleFound, outcome: events.OutcomeApplied}
	case f == FoundNothing && !resend, !e.Offered, e.Sends >= MaxSends, e.Cancel:
		if f == FoundNotApplied {
			return EffectStep{act: EffectSettleNotSent, outcome: events.OutcomeNotApplied}
		}
		return EffectStep{act: EffectSettleUnknown, outcome: events.OutcomeUnknown}
	}
	return e.fence()
}

// AfterSend is the step after a send whose answer says outcome (applied,
// not_applied, unknown, or "" from a tool that says nothing more than
// whether it failed: failed). An answer with an outcome settles the call;
// a lost answer (unknown) is reconciled, or, when a cancel or the budget
// stopped the send in flight (interrupted: no proof the effect was
// stopped), only looked for.
func (e Effect) AfterSend(outcome string, failed, interrupted bool) EffectStep {
	switch {
	case outcome == events.OutcomeUnknown && interrupted:
		return EffectStep{act: EffectLook, interrupted: true}
	case outcome == events.OutcomeUnknown:
		return EffectStep{act: EffectLookup}
	case outcome == "" && failed:
		outcome = events.OutcomeNotApplied
	case outcome == "":
		outcome = events.OutcomeApplied
	}
	return EffectStep{act: EffectSettleAnswer, outcome: outcome}
}

// AfterLook is the step after the look that follows an interrupted send:
// what it found settles the call (not applied only past the settle
// window: within it the look is made again once it has passed); nothing
// found, it is settled unknown and the run ends as the cancel or the
// budget says.
func (e Effect) AfterLook(f Finding) EffectStep {
	if w := e.Settling.wait(); f == FoundNotApplied && w > 0 {
		return EffectStep{act: EffectLook, wait: w, interrupted: true}
	}
	if f == FoundNothing {
		return EffectStep{act: EffectSettleUnknown, outcome: events.OutcomeUnknown, interrupted: true}
	}
	return EffectStep{act: EffectSettleLooked, outcome: f.Outcome(), interrupted: true}
}
