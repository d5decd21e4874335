// Package stallpolicy turns a case under its treatment into the stall
// core's policy. It is pure (cases, events and the core), so that the
// staller and analysts' replays (factline whatif) build the very same
// policy from a recorded run.
package stallpolicy

import (
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/staller/stall"
)

// From converts a case under its treatment into the core's policy: the
// resolved stall thresholds, and the requirements done needs (the case's
// requirements, each required check no requirement names, and the write
// requirement when the case needs an applied change).
func From(eff cases.Effective) stall.Policy {
	l := eff.Stall
	p := stall.Policy{
		RepeatedFailure:      l.RepeatedFailure,
		RepeatedObservation:  l.RepeatedObservation,
		RepeatedError:        l.RepeatedError,
		IdleTurns:            l.IdleTurns,
		Alternation:          l.Alternation,
		FailingVerifications: l.FailingVerifications,
		RepairBudget:         l.RepairBudget,
		EscalateTo:           l.EscalateTo,
	}
	c := eff.Case
	if c == nil {
		return p
	}
	p.FixtureDigest = c.FixtureDigest
	for _, n := range c.Needs() {
		p.Requirements = append(p.Requirements, stall.Requirement{ID: events.RequirementID(n.ID), Check: n.Check, Write: n.Write})
	}
	return p
}
