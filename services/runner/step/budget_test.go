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
