package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// sendable is an operation that may be sent again: offered, sent once, no
// cancel pending.
var sendable = Effect{Offered: true, Sends: 1}

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
	}{
		{rule: "an effect no attempt sent yet is sent", got: Effect{Offered: true}.Begin(false), want: EffectSend},
		{rule: "an effect an earlier attempt may have sent is looked up first", got: Effect{Offered: true}.Begin(true), want: EffectLookup},
		{rule: "an effect an earlier attempt may have sent is looked up even when its tool is gone", got: Effect{}.Begin(true), want: EffectLookup},

		{rule: "a lookup that finds it applied settles it, not sent again", got: sendable.AfterLookup(FoundApplied),
			want: EffectSettleFound, outcome: events.OutcomeApplied},
		{rule: "a lookup that finds it applied settles it even with a cancel pending", got: Effect{Offered: true, Cancel: true}.AfterLookup(FoundApplied),
			want: EffectSettleFound, outcome: events.OutcomeApplied},
		{rule: "a lookup that finds it not applied sends it again", got: sendable.AfterLookup(FoundNotApplied), want: EffectSend},
		{rule: "a lookup that finds nothing asks a person", got: sendable.AfterLookup(FoundNothing), want: EffectAskPerson},
		{rule: "a lookup that finds nothing at a sink that deduplicates sends again under the same key",
			got: Effect{Offered: true, Dedupes: true, Sends: 1}.AfterLookup(FoundNothing), want: EffectSend},
		{rule: "a sink that deduplicates does not make a send again of what was found applied",
			got: Effect{Offered: true, Dedupes: true, Sends: 1}.AfterLookup(FoundApplied), want: EffectSettleFound, outcome: events.OutcomeApplied},

		{rule: "a person who found it applied settles it", got: sendable.AfterPerson(FoundApplied),
			want: EffectSettleFound, outcome: events.OutcomeApplied},
		{rule: "a person who found it not applied has it sent again", got: sendable.AfterPerson(FoundNotApplied), want: EffectSend},
		{rule: "nobody resolving it settles it unknown and ends the run for a person", got: sendable.AfterPerson(FoundNothing),
			want: EffectSettleUnknown, outcome: events.OutcomeUnknown, ends: true},

		{rule: "an operation sent as often as allowed is not sent again",
			got: Effect{Offered: true, Sends: MaxSends}.AfterLookup(FoundNotApplied), want: EffectSettleNotSent, outcome: events.OutcomeNotApplied},
		{rule: "an operation sent one time fewer than allowed is sent again",
			got: Effect{Offered: true, Sends: MaxSends - 1}.AfterLookup(FoundNotApplied), want: EffectSend},
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
			if g.Act() != c.want || g.Outcome() != c.outcome || g.Interrupted() != c.interrupted || g.EndsRun() != c.ends {
				t.Errorf("step %q (outcome %q, interrupted %v, ends %v), want act %d outcome %q interrupted %v ends %v",
					g, g.Outcome(), g.Interrupted(), g.EndsRun(), c.want, c.outcome, c.interrupted, c.ends)
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
	for s.Act() == EffectSend {
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

// What a finding records as the outcome of a dispatch.
func TestAFindingsOutcome(t *testing.T) {
	for f, want := range map[Finding]string{FoundApplied: events.OutcomeApplied, FoundNotApplied: events.OutcomeNotApplied,
		FoundNothing: events.OutcomeUnknown} {
		if got := f.Outcome(); got != want {
			t.Errorf("finding %d: %q, want %q", f, got, want)
		}
	}
}
