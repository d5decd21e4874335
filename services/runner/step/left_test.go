package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// Every call of the last reply is settled as the run ends, one row per
// rule: how it is recorded, and what a status lookup may still change.
func TestACallLeftOpenIsSettledAsTheRunEnds(t *testing.T) {
	reply := replied(writeCall, httpCall)
	for _, c := range []struct {
		rule        string
		bodies      []events.Body
		call        events.ToolCall
		found       Finding
		want        LeftAct
		disposition events.Disposition
		mutation    events.Mutation
		outcome     string
		looked      bool
		// settling is where the lookup stands against the settle window;
		// wait is how long the lookup must wait to be made again.
		settling Settling
		wait     Nanos
	}{
		{rule: "a settled call is left as it is", bodies: with(reply, completed(writeCall)), call: writeCall, want: LeftSettled},
		{rule: "a call never started is not run", bodies: reply, call: writeCall, want: LeftNotRun,
			disposition: events.DispositionNotRun, mutation: events.MutationNotApplied},
		{rule: "an effect never intended is not run, and nothing is looked up", bodies: reply, call: httpCall, found: FoundApplied,
			want: LeftNotRun, disposition: events.DispositionNotRun, mutation: events.MutationNotApplied},
		{rule: "a workspace call in flight is interrupted", bodies: with(reply, intended(writeCall, events.EffectWrite)), call: writeCall,
			want: LeftInterrupted, disposition: events.DispositionCanceled, mutation: events.MutationNotApplied},
		{rule: "an effect in flight has an unknown outcome", bodies: with(reply, intended(httpCall, events.EffectExternal)), call: httpCall,
			want: LeftInFlight, disposition: events.DispositionCanceled, mutation: events.MutationNotApplicable, outcome: events.OutcomeUnknown},
		{rule: "an effect in flight the lookup finds applied is settled applied", bodies: with(reply, intended(httpCall, events.EffectExternal)),
			call: httpCall, found: FoundApplied, want: LeftInFlight, disposition: events.DispositionCanceled,
			mutation: events.MutationNotApplicable, outcome: events.OutcomeApplied, looked: true},
		{rule: "an effect in flight the lookup finds not applied is settled not applied", bodies: with(reply, intended(httpCall, events.EffectExternal)),
			call: httpCall, found: FoundNotApplied, want: LeftInFlight, disposition: events.DispositionCanceled,
			mutation: events.MutationNotApplicable, outcome: events.OutcomeNotApplied, looked: true},
		{rule: "an effect in flight the lookup finds not applied within the settle window is looked up again once it has passed",
			bodies: with(reply, intended(httpCall, events.EffectExternal)), call: httpCall, found: FoundNotApplied,
			settling: Settling{SinceQuiet: 3 * Second, Window: 5 * Second}, want: LeftInFlight, disposition: events.DispositionCanceled,
			mutation: events.MutationNotApplicable, outcome: events.OutcomeUnknown, wait: 2 * Second},
		{rule: "an effect in flight the lookup finds applied within the settle window is settled applied at once",
			bodies: with(reply, intended(httpCall, events.EffectExternal)), call: httpCall, found: FoundApplied,
			settling: Settling{SinceQuiet: 3 * Second, Window: 5 * Second}, want: LeftInFlight, disposition: events.DispositionCanceled,
			mutation: events.MutationNotApplicable, outcome: events.OutcomeApplied, looked: true},
	} {
		t.Run(c.rule, func(t *testing.T) {
			l := PlanLeft(ReadProgress(factsOf(t, c.bodies...)), c.call.ID).Found(c.found, c.settling)
			if l.Act() != c.want {
				t.Fatalf("act %d, want %d", l.Act(), c.want)
			}
			if c.want == LeftSettled {
				return
			}
			if l.Disposition() != c.disposition || l.Mutation() != c.mutation || l.Outcome() != c.outcome || l.Looked() != c.looked || l.Wait() != c.wait {
				t.Errorf("settled %s/%s outcome %q looked %v wait %s, want %s/%s outcome %q looked %v wait %s",
					l.Disposition(), l.Mutation(), l.Outcome(), l.Looked(), span(l.Wait()), c.disposition, c.mutation, c.outcome, c.looked, span(c.wait))
			}
			if c.want != LeftNotRun && l.Intended().CallID != c.call.ID {
				t.Errorf("intended %+v", l.Intended())
			}
		})
	}
}
