package events

import "slices"

// Signal is a control an operator can send to a run.
type Signal string

// Control signals. Each matters only once a runner accepts it, and the
// acceptance is the fact control.accepted.
const (
	SignalCancel  Signal = "cancel"
	SignalSteer   Signal = "steer"
	SignalApprove Signal = "approve"
	SignalReject  Signal = "reject"
	// SignalResolve settles an operation whose outcome the log does not
	// know (its runner died between intent and settlement) with a person's
	// finding: applied or not applied.
	SignalResolve Signal = "resolve"
)

var signals = []Signal{SignalCancel, SignalSteer, SignalApprove, SignalReject, SignalResolve}

// Signals returns every control signal, in a fixed order.
func Signals() []Signal { return slices.Clone(signals) }

// Outcomes a person can find when resolving an operation.
const (
	OutcomeApplied    = "applied"
	OutcomeNotApplied = "not_applied"
)

// ControlRef names an accepted control signal.
type ControlRef struct {
	ID     string `msgpack:"id"`
	Signal Signal `msgpack:"signal"`
}

func (c ControlRef) validate(p string) error {
	if err := needString(p, "id", c.ID); err != nil {
		return err
	}
	return needOneOf(p, "signal", c.Signal, signals)
}

// RunEvidence is what one completed turn hands to the stall handler and the
// stop decider: the actor's intent, what its calls did, and any control
// accepted during the turn.
type RunEvidence struct {
	RunID            string              `msgpack:"run_id"`
	TaskGeneration   uint32              `msgpack:"task_generation"`
	Turn             uint32              `msgpack:"turn"`
	EvidencePosition uint64              `msgpack:"evidence_position"`
	ActorIntent      ActorIntent         `msgpack:"actor_intent"`
	Dispatches       []CompletedDispatch `msgpack:"dispatches"`
	AcceptedControl  *ControlRef         `msgpack:"accepted_control,omitempty"`
}

func (e RunEvidence) validate(p string) error {
	if err := needString(p, "run_id", e.RunID); err != nil {
		return err
	}
	if err := needPositive(p, "task_generation", e.TaskGeneration); err != nil {
		return err
	}
	if err := needPositive(p, "turn", e.Turn); err != nil {
		return err
	}
	if err := needPositive(p, "evidence_position", e.EvidencePosition); err != nil {
		return err
	}
	if err := e.ActorIntent.validate(join(p, "actor_intent")); err != nil {
		return err
	}
	if err := each(p, "dispatches", e.Dispatches); err != nil {
		return err
	}
	if e.AcceptedControl != nil {
		return e.AcceptedControl.validate(join(p, "accepted_control"))
	}
	return nil
}
