package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// The newest lease is the highest claimed, whatever the order the claims
// landed in; only the last decision says whether the finish is decided.
func TestLeasesAndTheDecidedFinish(t *testing.T) {
	claim := func(lease uint32) events.RunClaimed { return events.RunClaimed{Runner: "r", Lease: lease} }
	decided := func(turn uint32, r events.StopResult) events.StopDecided {
		return events.StopDecided{Decision: events.StopDecision{DecisionID: "d", Turn: turn, TaskGeneration: 1, Result: r}}
	}
	finish := decided(1, events.Finish(events.StopFinish{Status: events.FinishIncomplete, Reason: "stall"}))
	if l := CurrentLease(nil); l != 0 {
		t.Errorf("an unclaimed run has lease %d", l)
	}
	facts := factsOf(t, claim(1), claim(3), claim(2))
	if l := CurrentLease(facts); l != 3 {
		t.Errorf("lease %d, want 3", l)
	}
	if FinishDecided(facts) {
		t.Error("a run with no decision has its finish decided")
	}
	if !FinishDecided(factsOf(t, decided(1, events.ContinueWith("")), finish)) {
		t.Error("a finish after a continue is not decided")
	}
	if FinishDecided(factsOf(t, finish, decided(2, events.ContinueWith("")))) {
		t.Error("only the last decision counts")
	}
}
