package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// sendable is an operation that may be sent again: offered, sent once, no
// cancel pending, its settle window passed.
var sendable = Effect{Offered: true, Sends: 1}

// settling is sendable within its settle window: a second after quiet, a
// window of five.
var settling = Effect{Offered: true, Sends: 1, Settling: Settling{SinceQuiet: Second, Window: 5 * Second}}

// Every rule that decides the next step of settling an external operation,
// one row each, named as the rule.
func TestTheNextStepOfAnEffect(t *testing.T) {
	for _, c := range []struct {
		rule    string
		got     EffectStep
		want    EffectAct
		outcome string
		// interrupted and ends are what the step says of the dispatch's
		// disposition and of the run.
		interrupted, ends bool
		// wait is how long the step waits before it is taken.
		wait Nanos
	}{
		{rule: "an effect no attempt sent yet is sent", got: Effect{Offered: true}.Begin(false), want: EffectFence},
		{rule: "an effect an earlier attempt may have sent is looked up first", got: Effect{Offered: true}.Begin(true), want: EffectLookup},
		{rule: "an effect an earlier attempt may have sent is looked up even when its tool is gone", got: Effect{}.Begin(true), want: EffectLookup},

		{rule: "a send due for the first time goes at once", got: Effect{Offered: true}.Begin(false), want: EffectFence},
		{rule: "a send again waits a backoff that grows with the sends", got: Effect{Offered: true, Sends: 2}.AfterLookup(FoundNotApplied),
			want: EffectFence, wait: 500 * Millisecond},

		{rule: "a fence that holds lets the send start", got: sendable.AfterFence(held(5 * Second)), want: EffectSend},
		{rule: "a fence the server did not confirm hands the run back, nothing sent",
			got: sendable.AfterFence(Hold{AckWait: 5 * Second, Checked: true}), want: EffectHandBack},
		{rule: "a fence past its window hands the run back, nothing sent",
			got: sendable.AfterFence(Hold{AckWait: 5 * Second, Renewed: true, Checked: true, CheckedAt: Second, Now: 5 * Second}), want: EffectHandBack},

		{rule: "a lookup that finds it not applied within the settle window is made again once the window has passed",
			got: settling.AfterLookup(FoundNotApplied), want: EffectLookup, wait: 4 * Second},
		{rule: "a lookup that finds it not applied before quiet waits for quiet and the whole window",
			got:  Effect{Offered: true, Settling: Settling{SinceQuiet: -2 * Second, Window: 5 * Second}}.AfterLookup(FoundNotApplied),
			want: EffectLookup, wait: 7 * Second},
		{rule: "a lookup that finds it not applied past the settle window sends it again",
			got:  Effect{Offered: true, Sends: 1, Settling: Settling{SinceQuiet: 5 * Second, Window: 5 * Second}}.AfterLookup(FoundNotApplied),
			want: EffectFence, wait: 250 * Millisecond},
		{rule: "a lookup that finds it applied within the settle window is believed at once", got: settling.AfterLookup(FoundApplied),
			want: EffectSettleFound, outcome: events.OutcomeApplied},
		{rule: "a lookup that finds nothing within the settle window asks a person at once", got: settling.AfterLookup(FoundNothing),
			want: EffectAskPerson},
		{rule: "a person's finding is believed within the settle window", got: settling.AfterPerson(FoundNotApplied),
			want: EffectFence, wait: 250 * Millisecond},
		{rule: "a look after an interrupted send that finds it not applied within the settle window is made again",
			got: settling.AfterLook(FoundNotApplied), want: EffectLook, interrupted: true, wait: 4 * Second},
		{rule: "a look after an interrupted send that finds it applied within the settle window is believed",
			got: settling.AfterLook(FoundApplied), want: EffectSettleLooked, outcome: events.OutcomeApplied, interrupted: true},

		{rule: "a lookup that finds it applied settles it, not sent again", got: sendable.AfterLookup(FoundApplied),
			want: EffectSettleFound, outcome: events.OutcomeApplied},
		{rule: "a lookup that finds it applied settles it even with a cancel pending", got: Effect{Offered: true, Cancel: true}.AfterLookup(FoundApplied),
			want: EffectSettleFound, outcome: events.OutcomeApplied},
		{rule: "a lookup that finds it not applied sends it again", got: sendable.AfterLookup(FoundNotApplied), want: EffectFence, wait: 250 * Millisecond},
		{rule: "a lookup that finds nothing asks a person", got: sendable.AfterLookup(FoundNothing), want: EffectAskPerson},
		{rule: "a lookup that finds nothing at a sink that deduplicates sends again under the same key",
			got: Effect{Offered: true, Dedupes: true, Sends: 1}.AfterLookup(FoundNothing), want: EffectFence, wait: 250 * Millisecond},
		{rule: "a sink that deduplicates does not make a send again of what was found applied",
			got: Effect{Offered: true, Dedupes: true, Sends: 1}.AfterLookup(FoundApplied), want: EffectSettleFound, outcome: events.OutcomeApplied},

		{rule: "a person who found it applied settles it", got: sendable.AfterPerson(FoundApplied),
			want: EffectSettleFound, outcome: events.OutcomeApplied},
		{rule: "a person who found it not applied has it sent again", got: sendable.AfterPerson(FoundNotApplied), want: EffectFence, wait: 250 * Millisecond},
		{rule: "nobody resolving it settles it unknown and ends the run for a person", got: sendable.AfterPerson(FoundNothing),
			want: EffectSettleUnknown, outcome: events.OutcomeUnknown, ends: true},

		{rule: "an operation sent as often as allowed is not sent again",
			got: Effect{Offered: true, Sends: MaxSends}.AfterLookup(FoundNotApplied), want: EffectSettleNotSent, outcome: events.OutcomeNotApplied},
		{rule: "an operation sent one time fewer than allowed is sent again",
			got: Effect{Offered: true, Sends: MaxSends - 1}.AfterLookup(FoundNotApplied), want: EffectFence, wait: 500 * Millisecond},
		{rule: "an operation whose tool is no longer offered is not sent again",
			got: Effect{Sends: 0}.AfterLookup(FoundNotApplied), want: EffectSettleNotSent, outcome: events.OutcomeNotApplied},
		{rule: "nothing is sent again with a cancel pending",
			got: Effect{Offered: true, Sends: 1, Cancel: true}.AfterPerson(FoundNotApplied), want: EffectSettleNotSent, outcome: events.OutcomeNotApplied},
		{rule: "a sink that deduplicates gets no send again with a cancel pending: the outcome stays unknown",
			got:  Effect{Offered: true, Dedupes: true, Sends: 1, Cancel: true}.AfterLookup(FoundNothing),
			want: EffectSettleUnknown, outcome: events.OutcomeUnknown, ends: true},
		{rule: "a sink that deduplicates gets no send again past the bound: the outcome stays unknown",
			got:  Effect{Offered: true, Dedupes: true, Sends: MaxSends}.AfterLookup(FoundNothing),
			want: EffectSettleUnknown, outcome: events.OutcomeUnknown, ends: true},

		{rule: "an answer that says applied settles it applied", got: sendable.AfterSend(events.OutcomeApplied, false, false),
			want: EffectSettleAnswer, outcome: events.OutcomeApplied},
		{rule: "an answer that says not applied settles it not applied", got: sendable.AfterSend(events.OutcomeNotApplied, true, false),
			want: EffectSettleAnswer, outcome: events.OutcomeNotApplied},
		{rule: "an answer that says nothing of the outcome and no failure is applied", got: sendable.AfterSend("", false, false),
			want: EffectSettleAnswer, outcome: events.OutcomeApplied},
		{rule: "an answer that says nothing of the outcome and a failure is not applied", got: sendable.AfterSend("", true, false),
			want: EffectSettleAnswer, outcome: events.OutcomeNotApplied},
		{rule: "an answer holds even if the send was interrupted after it", got: sendable.AfterSend(events.OutcomeApplied, false, true),
			want: EffectSettleAnswer, outcome: events.OutcomeApplied},
		{rule: "a lost answer is reconciled", got: sendable.AfterSend(events.OutcomeUnknown, true, false), want: EffectLookup},
		{rule: "a send interrupted in flight is only looked for", got: sendable.AfterSend(events.OutcomeUnknown, true, true),
			want: EffectLook, interrupted: true},

		{rule: "a look that finds it applied settles it, canceled", got: sendable.AfterLook(FoundApplied),
			want: EffectSettleLooked, outcome: events.OutcomeApplied, interrupted: true},
		{rule: "a look that finds it not applied settles it, canceled", got: sendable.AfterLook(FoundNotApplied),
			want: EffectSettleLooked, outcome: events.OutcomeNotApplied, interrupted: true},
		{rule: "a look that finds nothing settles it unknown and leaves the run's end to the cancel or the budget",
			got: sendable.AfterLook(FoundNothing), want: EffectSettleUnknown, outcome: events.OutcomeUnknown, interrupted: true},
	} {
		t.Run(c.rule, func(t *testing.T) {
			g := c.got
			if g.Act() != c.want || g.Outcome() != c.outcome || g.Interrupted() != c.interrupted || g.EndsRun() != c.ends || g.Wait() != c.wait {
				t.Errorf("step %q (outcome %q, interrupted %v, ends %v, wait %s), want act %d outcome %q interrupted %v ends %v wait %s",
					g, g.Outcome(), g.Interrupted(), g.EndsRun(), span(g.Wait()), c.want, c.outcome, c.interrupted, c.ends, span(c.wait))
			}
			if (g.Act() == EffectHandBack) != (g.Refusal() != "") {
				t.Errorf("step %q refuses %q", g, g.Refusal())
			}
		})
	}
}

// An operation is sent at most MaxSends times, however often it is found
// not applied: following the steps from its first send, the sends stop at
// the bound and it is settled not applied.
func TestAnOperationIsSentAtMostMaxSendsTimes(t *testing.T) {
	e := Effect{Offered: true}
	s := e.Begin(false)
	for s.Act() == EffectFence {
		e.Sends++
		if e.Sends > MaxSends {
			t.Fatalf("sent %d times", e.Sends)
		}
		if s = e.AfterSend(events.OutcomeUnknown, true, false); s.Act() != EffectLookup {
			t.Fatalf("after a lost answer: %q", s)
		}
		s = e.AfterLookup(FoundNotApplied)
	}
	if e.Sends != MaxSends || s.Act() != EffectSettleNotSent {
		t.Errorf("%d sends, then %q; want %d, then settled not sent", e.Sends, s, MaxSends)
	}
}

// Sends of one operation are spaced: the first goes at once, each send
// again waits a quarter second more than the last, never more than two.
func TestSendsAgainBackOffBounded(t *testing.T) {
	for sends, want := range map[int]Nanos{0: 0, 1: 250 * Millisecond, 2: 500 * Millisecond, 8: 2 * Second, 100: 2 * Second} {
		if got := backoff(sends); got != want {
			t.Errorf("after %d sends: %s, want %s", sends, span(got), span(want))
		}
	}
}

// What a finding records as the outcome of a dispatch.
func TestAFindingsOutcome(t *testing.T) {
	for f, want := range map[Finding]string{FoundApplied: events.OutcomeApplied, FoundNotApplied: events.OutcomeNotApplied,
		FoundNothing: events.OutcomeUnknown} {
		if got := f.Outcome(); got != want {
			t.Errorf("finding %d: %q, want %q", f, got, want)
		}
	}
}
