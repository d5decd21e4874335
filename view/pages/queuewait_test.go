package pages_test

import (
	"testing"
	"time"

	"github.com/factline/factline/events"
)

// A turn whose model call waited for a fleet-wide slot shows the wait; a
// turn that did not wait shows none.
func TestATurnShowsItsWaitForAModelSlot(t *testing.T) {
	s := newScenario(t)
	const suite, run = "s", "r"
	s.add(suite, run, 1, events.OwnerMeter, events.RunRequested{Case: "c", CaseDigest: digest, Treatment: "t", TreatmentDigest: digest, Trial: 1})
	s.add(suite, run, 1, events.OwnerRunner, events.RunClaimed{Runner: "r1", Lease: 1})
	s.add(suite, run, 1, events.OwnerRunner, events.TurnStarted{Turn: 1, ContextDigest: digest, Messages: 2})
	s.add(suite, run, 1, events.OwnerRunner, events.ModelReplied{Turn: 1, Provider: "openai", Text: "a", QueueWaitMs: 4200})
	s.add(suite, run, 1, events.OwnerRunner, events.TurnStarted{Turn: 2, ContextDigest: digest, Messages: 4})
	s.add(suite, run, 1, events.OwnerRunner, events.ModelReplied{Turn: 2, Provider: "openai", Text: "b"})
	p, ok := s.m.Run(suite, run)
	if !ok || len(p.Turns) != 2 {
		t.Fatalf("page %v: %+v", ok, p.Turns)
	}
	if got := p.Turns[0].QueueWait; got != 4200*time.Millisecond {
		t.Fatalf("turn 1 waited %s, want 4.2s", got)
	}
	if got := p.Turns[1].QueueWait; got != 0 {
		t.Fatalf("turn 2 waited %s, want none", got)
	}
}
