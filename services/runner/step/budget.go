package step

import "github.com/factline/factline/events"

// Stop reasons for the budget limits this package decides. They end a run
// exhausted (see Exhausted), never as an error: running out is an honest
// ending.
const (
	ReasonStepLimit           = "step_limit"
	ReasonBudgetPreflight     = "budget_preflight"
	ReasonReservationExceeded = "reservation_exceeded"
	ReasonInputTokenLimit     = "input_token_limit"
	ReasonOutputTokenLimit    = "output_token_limit"
	// ReasonWallLimit is the wall-time limit, which the runner checks with
	// its clock.
	ReasonWallLimit = "wall_time_limit"
)

// Exhausted is the ending of a run that spent a budget before it was done:
// steps, tokens, cost, wall time, or a call that cost more than it
// reserved. The limit is its reason. It is not incomplete: incomplete is
// the stop decider's finish (a stall stop among them), exhausted is the
// runner's hard limit, and an analyst must be able to tell the two apart.
func Exhausted(limit string) Ending {
	return Ending{Status: events.RunExhausted, Reason: limit}
}

// Budget is the part of a case's budget that facts can tell: steps, tokens
// and cost. A zero limit is no limit. The wall-time limit is not here: it
// needs a clock, and the runner checks it.
type Budget struct {
	Steps        uint32
	InputTokens  uint64
	OutputTokens uint64
	Cost         uint64
}

// Spend is what a run has consumed so far, folded from its facts.
type Spend struct {
	Steps        uint32
	InputTokens  uint64
	OutputTokens uint64
	// TokensKnown is false once any reply came without usage.
	TokensKnown bool
	// Charged is what the cost budget counts: known costs, plus the
	// reservation of every call whose cost is unknown.
	Charged uint64
	// Cost is the sum of known costs; CostKnown is false once any reply
	// came without a cost.
	Cost      uint64
	CostKnown bool
	// Reserved is what the run's running children hold: the budget their
	// delegate calls reserved, counted against the run's limits until the
	// child's end replaces it with what the child spent. It is no spend:
	// Spent leaves it out.
	Reserved Budget
}

// Tally folds a run's facts into its spend: every model call, its turns'
// and its summaries' (context.summarised), and every child a delegate
// call started: its reservation while it runs, what it spent once its
// end is settled (exactly once: a child settled is no longer reserved).
func Tally(facts []events.Fact) Spend {
	t := newTally()
	for _, f := range facts {
		t.apply(f)
	}
	return t.spend()
}

// tally is Tally's fold: the spend so far, and what it needs to charge
// the facts still to come (each started turn's reservation, the turns
// still waiting for their reply, the children still running).
type tally struct {
	s        Spend
	reserve  map[uint32]uint64
	awaiting map[uint32]bool
	children map[turnCall]events.Delegation
}

// turnCall names a call of a turn.
type turnCall struct {
	turn uint32
	id   events.CallID
}

func newTally() tally {
	return tally{s: Spend{TokensKnown: true, CostKnown: true}, reserve: map[uint32]uint64{},
		awaiting: map[uint32]bool{}, children: map[turnCall]events.Delegation{}}
}

// apply folds one fact into the tally.
func (t *tally) apply(f events.Fact) {
	s := &t.s
	switch b := f.Body.(type) {
	case events.TurnStarted:
		s.Steps++
		t.reserve[b.Turn] = b.Reserve
		t.awaiting[b.Turn] = true
	case events.ModelReplied:
		delete(t.awaiting, b.Turn)
		s.charge(b.Usage, t.reserve[b.Turn])
	case events.ContextSummarised:
		// A summary is a model call of the run: charged like a reply,
		// never a step.
		s.charge(b.Usage, b.Reserve)
	case events.DispatchIntended:
		if b.Delegation != nil {
			t.children[turnCall{b.Turn, b.CallID}] = *b.Delegation
		}
	case events.DispatchCompleted:
		k := turnCall{b.Turn, b.Dispatch.CallID}
		if _, ok := t.children[k]; !ok {
			return
		}
		delete(t.children, k)
		if c := b.Child; c != nil {
			s.Steps += c.Steps
			s.chargeChild(c)
		}
	}
}

// spend is the spend so far, with what the running children hold. A
// turn started without its reply (the run ended during the call, or the
// call is under way) was sent to the provider and may have been billed:
// its usage is unknown, charged at its reservation like any reply without
// usage.
func (t *tally) spend() Spend {
	s := t.s
	for turn := range t.awaiting {
		s.charge(nil, t.reserve[turn])
	}
	for _, d := range t.children {
		s.Reserved.Steps += d.Steps
		s.Reserved.InputTokens += d.InputTokens
		s.Reserved.OutputTokens += d.OutputTokens
		s.Reserved.Cost += d.Cost
	}
	return s
}

// chargeChild charges what a settled child spent: its tokens (unknown
// where any of its calls reported none) and what its cost budget counted.
func (s *Spend) chargeChild(c *events.ChildOutcome) {
	s.Charged += c.Charged
	if c.Usage == nil {
		s.TokensKnown, s.CostKnown = false, false
		return
	}
	s.InputTokens += c.Usage.InputTokens
	s.OutputTokens += c.Usage.OutputTokens
	if c.Usage.Cost == nil {
		s.CostKnown = false
		return
	}
	s.Cost += *c.Usage.Cost
}

func (s *Spend) charge(u *events.Usage, reserve uint64) {
	if u == nil {
		s.TokensKnown, s.CostKnown = false, false
		s.Charged += reserve
		return
	}
	s.InputTokens += u.InputTokens
	s.OutputTokens += u.OutputTokens
	if u.Cost == nil {
		s.CostKnown = false
		s.Charged += reserve
		return
	}
	s.Cost += *u.Cost
	s.Charged += *u.Cost
}

// Spent renders the spend for run.ended: unknown stays unknown.
func (s Spend) Spent(millis uint64) events.Spent {
	out := events.Spent{Steps: s.Steps, Millis: millis}
	if s.TokensKnown {
		t := s.InputTokens + s.OutputTokens
		out.Tokens = &t
	}
	if s.CostKnown {
		c := s.Cost
		out.Cost = &c
	}
	return out
}

// Preflight decides, before a model call, whether the budget allows it:
// the steps left, the tokens left and whether the call's worst-case cost
// fits what remains. It returns the limit that refuses the call, or "".
func Preflight(b Budget, s Spend, reserve uint64) string {
	// What running children hold reserved is not this call's to spend.
	r := s.Reserved
	switch {
	case b.Steps > 0 && s.Steps+r.Steps >= b.Steps:
		return ReasonStepLimit
	case b.InputTokens > 0 && s.InputTokens+r.InputTokens >= b.InputTokens:
		return ReasonInputTokenLimit
	case b.OutputTokens > 0 && s.OutputTokens+r.OutputTokens >= b.OutputTokens:
		return ReasonOutputTokenLimit
	case b.Cost > 0 && (s.Charged+r.Cost > b.Cost || reserve > b.Cost-s.Charged-r.Cost):
		return ReasonBudgetPreflight
	}
	return ""
}

// Overrun decides, after a reply, whether it broke the budget's
// assumptions: a cost above its reservation ends the run (the excess stays
// counted), as does passing a token limit.
func Overrun(b Budget, s Spend, u *events.Usage, reserve uint64) string {
	if u != nil && u.Cost != nil && *u.Cost > reserve && b.Cost > 0 {
		return ReasonReservationExceeded
	}
	switch {
	case b.InputTokens > 0 && s.InputTokens > b.InputTokens:
		return ReasonInputTokenLimit
	case b.OutputTokens > 0 && s.OutputTokens > b.OutputTokens:
		return ReasonOutputTokenLimit
	}
	return ""
}
