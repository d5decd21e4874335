package events

// RunDelegated (run.delegated) asks for a child run: a runner's delegate
// call hands part of its run's work to another run on the same bus. It is
// the child's first fact, on the child's subject, and carries what a
// run.requested carries (the child's own case, made from the parent's with
// the call's instruction, tools and carved budget, and the parent's
// treatment) with the parent it belongs to. The runner owns it: the meter
// plans suites, and a child is no attempt of the suite (it is part of its
// parent's attempt; no grader grades it).
type RunDelegated struct {
	Request RunRequested `msgpack:"request"`
	Parent  ParentRef    `msgpack:"parent"`
}

// ParentRef names the run and the call that started a child run: the
// parent's delegate call, by its turn, call ID and operation ID (from
// which the child's run ID is made, so that a parent's retry finds the
// child instead of starting another).
type ParentRef struct {
	Run         string `msgpack:"run" json:"run"`
	Turn        uint32 `msgpack:"turn" json:"turn"`
	CallID      CallID `msgpack:"call_id" json:"call_id"`
	OperationID string `msgpack:"operation_id" json:"operation_id"`
}

// Kind implements Body.
func (RunDelegated) Kind() Kind { return KindRunDelegated }

func (b RunDelegated) validate(p string) error {
	if err := b.Request.validate(join(p, "request")); err != nil {
		return err
	}
	return b.Parent.validate(join(p, "parent"))
}

func (r ParentRef) validate(p string) error {
	if err := ValidateToken("run", r.Run); err != nil {
		return invalid(join(p, "run"), "%v", err)
	}
	if err := needPositive(p, "turn", r.Turn); err != nil {
		return err
	}
	if err := needString(p, "call_id", r.CallID); err != nil {
		return err
	}
	return needString(p, "operation_id", r.OperationID)
}

// Delegation is what a delegate call's dispatch.intended reserves: the
// child run it starts (a run ID made from the call's operation ID) and the
// budget carved out of the parent's remaining budget for it. The parent's
// budget counts the reservation while the child runs and the child's
// spend once it has ended (DispatchCompleted.Child). A zero limit is no
// limit of that kind, as in a case's budget.
type Delegation struct {
	Run          string `msgpack:"run" json:"run"`
	Steps        uint32 `msgpack:"steps" json:"steps"`
	InputTokens  uint64 `msgpack:"input_tokens,omitempty" json:"input_tokens,omitempty"`
	OutputTokens uint64 `msgpack:"output_tokens,omitempty" json:"output_tokens,omitempty"`
	Cost         uint64 `msgpack:"cost,omitempty" json:"cost,omitempty"`
	WallMillis   uint64 `msgpack:"wall_millis,omitempty" json:"wall_millis,omitempty"`
}

func (d Delegation) validate(p string) error {
	if err := ValidateToken("run", d.Run); err != nil {
		return invalid(join(p, "run"), "%v", err)
	}
	return needPositive(p, "steps", d.Steps)
}

// ChildOutcome is how a delegate call's child run ended, as its parent's
// dispatch.completed records it: its terminal state, its evidence (the
// final answer it gave) and what it consumed, which the parent's budget
// charges exactly once, here, in place of the reservation.
type ChildOutcome struct {
	Run    string    `msgpack:"run" json:"run"`
	Status RunStatus `msgpack:"status" json:"status"`
	Reason string    `msgpack:"reason" json:"reason"`
	// Answer is the child's final answer: the text of its last reply that
	// had any (cut at 8 KiB).
	Answer string `msgpack:"answer,omitempty" json:"answer,omitempty"`
	// Steps is the child's model turns.
	Steps uint32 `msgpack:"steps" json:"steps"`
	// Usage sums what the child's model calls reported (nil: any of them
	// reported none; a nil Cost: any reported no cost): unknown stays
	// unknown.
	Usage *Usage `msgpack:"usage,omitempty" json:"usage,omitempty"`
	// Charged is what the child's cost budget counted: known costs, and
	// the reservation of every call whose cost is unknown.
	Charged uint64 `msgpack:"charged" json:"charged"`
}

func (c ChildOutcome) validate(p string) error {
	if err := ValidateToken("run", c.Run); err != nil {
		return invalid(join(p, "run"), "%v", err)
	}
	if err := needOneOf(p, "status", c.Status, runStatuses); err != nil {
		return err
	}
	return needString(p, "reason", c.Reason)
}
