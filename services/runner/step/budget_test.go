package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// Spend folds usage; unknown usage stays unknown and is charged at its
// reservation.
func TestTallyAndLimits(t *testing.T) {
	var bodies []events.Body
	bodies = append(bodies, turnBodies(1, "", "c1", "{}", &events.Usage{InputTokens: 10, OutputTokens: 5, Cost: cost(2)})...)
	bodies = append(bodies, turnBodies(2, "", "c1", "{}", nil)...)
	s := Tally(factsOf(t, bodies...))
	if s.Steps != 2 || s.Charged != 5 || s.CostKnown || s.TokensKnown || s.Cost != 2 {
		t.Fatalf("spend %+v", s)
	}
	sp := s.Spent(10)
	if sp.Tokens != nil || sp.Cost != nil || sp.Steps != 2 {
		t.Fatalf("unknown usage became known: %+v", sp)
	}
	b := Budget{Steps: 6, Cost: 12}
	if r := Preflight(b, Spend{Steps: 6}, 0); r != ReasonStepLimit {
		t.Fatalf("steps: %q", r)
	}
	if r := Preflight(b, Spend{Charged: 10}, 3); r != ReasonBudgetPreflight {
		t.Fatalf("reservation over what remains: %q", r)
	}
	if r := Preflight(b, Spend{Charged: 9}, 3); r != "" {
		t.Fatalf("a reservation that fits was refused: %q", r)
	}
	if r := Overrun(b, Spend{}, &events.Usage{Cost: cost(4)}, 3); r != ReasonReservationExceeded {
		t.Fatalf("overrun: %q", r)
	}
	if r := Overrun(b, Spend{}, &events.Usage{Cost: cost(3)}, 3); r != "" {
		t.Fatalf("a cost equal to its reservation overran: %q", r)
	}
}

// A turn started whose reply never came (the wall limit ended the run
// during the call) may have been billed: the run's tokens and cost are
// unknown, never zero, and its reservation is charged like any call of
// unknown cost.
func TestAStartedTurnWithoutItsReplyMakesSpendUnknown(t *testing.T) {
	bodies := turnBodies(1, "", "c1", "{}", &events.Usage{InputTokens: 10, OutputTokens: 5, Cost: cost(2)})
	d := events.DigestOf([]byte("turn 2"))
	bodies = append(bodies, events.TurnStarted{Turn: 2, ContextDigest: d, Reserve: 3})
	s := Tally(factsOf(t, bodies...))
	if s.TokensKnown || s.CostKnown || s.Charged != 5 || s.Steps != 2 {
		t.Fatalf("spend %+v: want tokens and cost unknown, 5 charged, 2 steps", s)
	}
	if sp := s.Spent(10); sp.Tokens != nil || sp.Cost != nil {
		t.Fatalf("run.ended spent %+v: an unanswered call counted as known", sp)
	}
	st := NewStanding()
	st.Catch(factsOf(t, bodies...))
	if got := st.Spend(); got.TokensKnown || got.CostKnown || got.Charged != 5 {
		t.Errorf("standing spend %+v disagrees with Tally", got)
	}
}
