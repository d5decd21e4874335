package cases

import "fmt"

// StallPolicy holds the stall handler's thresholds. Every field is optional:
// an absent one takes its default (see Resolve and docs/stopping.md), and a
// treatment may override any of them. A threshold of 0 disables its pattern.
type StallPolicy struct {
	// RepeatedFailure: the same failing check on an unchanged workspace this
	// many times in a row stops repair (seed 002 uses 2).
	RepeatedFailure *int `yaml:"repeated_failure,omitempty" json:"repeated_failure,omitempty"`
	// RepeatedObservation: the same action answered by a byte-identical
	// observation this many times in a row. (A repeated call whose output
	// changes is polling, not a loop.)
	RepeatedObservation *int `yaml:"repeated_observation,omitempty" json:"repeated_observation,omitempty"`
	// RepeatedError: the same action ending in the same error this many
	// times in a row.
	RepeatedError *int `yaml:"repeated_error,omitempty" json:"repeated_error,omitempty"`
	// IdleTurns: this many turns in a row without a tool call.
	IdleTurns *int `yaml:"idle_turns,omitempty" json:"idle_turns,omitempty"`
	// Alternation: this many A-B cycles of the same two actions in a row.
	Alternation *int `yaml:"alternation,omitempty" json:"alternation,omitempty"`
	// FailingVerifications: this many turns with a failing verification and
	// no clean pass since, whatever the error text says.
	FailingVerifications *int `yaml:"failing_verifications,omitempty" json:"failing_verifications,omitempty"`
	// RepairBudget: how many retries (with feedback) the stall handler
	// grants before it stops or escalates.
	RepairBudget *int `yaml:"repair_budget,omitempty" json:"repair_budget,omitempty"`
	// EscalateTo names the admitted escalation target (a reviewer model, a
	// human queue); empty means repair ends with stop.
	EscalateTo string `yaml:"escalate_to,omitempty" json:"escalate_to,omitempty"`
}

// StallLimits is a StallPolicy with every default filled in.
type StallLimits struct {
	RepeatedFailure      int
	RepeatedObservation  int
	RepeatedError        int
	IdleTurns            int
	Alternation          int
	FailingVerifications int
	RepairBudget         int
	EscalateTo           string
}

// DefaultStall are the thresholds used where a case and its treatment say
// nothing; docs/stopping.md says where each comes from.
var DefaultStall = StallLimits{
	RepeatedFailure:      2,
	RepeatedObservation:  3,
	RepeatedError:        3,
	IdleTurns:            3,
	Alternation:          3,
	FailingVerifications: 6,
	RepairBudget:         2,
}

// Resolve fills the policy's gaps from base.
func (p StallPolicy) Resolve(base StallLimits) StallLimits {
	pick := func(v *int, d int) int {
		if v != nil {
			return *v
		}
		return d
	}
	out := StallLimits{
		RepeatedFailure:      pick(p.RepeatedFailure, base.RepeatedFailure),
		RepeatedObservation:  pick(p.RepeatedObservation, base.RepeatedObservation),
		RepeatedError:        pick(p.RepeatedError, base.RepeatedError),
		IdleTurns:            pick(p.IdleTurns, base.IdleTurns),
		Alternation:          pick(p.Alternation, base.Alternation),
		FailingVerifications: pick(p.FailingVerifications, base.FailingVerifications),
		RepairBudget:         pick(p.RepairBudget, base.RepairBudget),
		EscalateTo:           base.EscalateTo,
	}
	if p.EscalateTo != "" {
		out.EscalateTo = p.EscalateTo
	}
	return out
}

// Over returns the policy p with every field o sets replacing p's: how a
// treatment overrides a case.
func (p StallPolicy) Over(o StallPolicy) StallPolicy {
	set := func(dst **int, v *int) {
		if v != nil {
			*dst = v
		}
	}
	set(&p.RepeatedFailure, o.RepeatedFailure)
	set(&p.RepeatedObservation, o.RepeatedObservation)
	set(&p.RepeatedError, o.RepeatedError)
	set(&p.IdleTurns, o.IdleTurns)
	set(&p.Alternation, o.Alternation)
	set(&p.FailingVerifications, o.FailingVerifications)
	set(&p.RepairBudget, o.RepairBudget)
	if o.EscalateTo != "" {
		p.EscalateTo = o.EscalateTo
	}
	return p
}

func (p StallPolicy) check(field string) error {
	for name, v := range map[string]*int{
		"repeated_failure": p.RepeatedFailure, "repeated_observation": p.RepeatedObservation,
		"repeated_error": p.RepeatedError, "idle_turns": p.IdleTurns, "alternation": p.Alternation,
		"failing_verifications": p.FailingVerifications, "repair_budget": p.RepairBudget,
	} {
		if v != nil && *v < 0 {
			return fieldErr(fmt.Sprintf("%s.%s", field, name), "cannot be negative (0 disables the pattern)")
		}
	}
	return nil
}

// Check refuses a negative threshold, naming it under field (as in
// "stall.repair_budget"). Files that hold a stall policy of their own (a
// candidate policy for factline whatif) check it as a case does.
func (p StallPolicy) Check(field string) error { return p.check(field) }
