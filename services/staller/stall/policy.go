// Package stall is the stall handler's pure core: one fold over a run's facts
// that owns repeat detection, progress and bounded repair. Fold reads facts
// in log order; Observe turns the fold's reading of one completed turn into
// the stall observation the service commits. The package does no I/O and
// imports only events and the standard library, so tests, property checks
// and analysts' replays drive it with facts alone. docs/stopping.md states
// the rules and the thresholds.
package stall

import "github.com/factline/factline/events"

// The stall patterns. Each is also the cause named by the action it leads
// to and the key of its threshold in a case's stall policy.
const (
	// PatternRepeatedFailure: the same declared check failing on an
	// unchanged workspace, several times in a row.
	PatternRepeatedFailure = "repeated_failure"
	// PatternFailingVerifications: turns with a failing declared check and
	// no clean pass since, whatever the error text says.
	PatternFailingVerifications = "failing_verifications"
	// PatternRepeatedError: the same calls ending in the same error codes,
	// several turns in a row.
	PatternRepeatedError = "repeated_error"
	// PatternRepeatedObservation: the same calls answered by byte-identical
	// observations, several turns in a row.
	PatternRepeatedObservation = "repeated_observation"
	// PatternAlternation: two different steps alternating with the same
	// results (A-B-A-B).
	PatternAlternation = "alternation"
	// PatternIdleTurns: turns in a row that did no work.
	PatternIdleTurns = "idle_turns"
)

// patternOrder is the priority in which armed patterns name an action's
// cause: verification evidence first, then repeats, then idleness.
var patternOrder = []string{
	PatternRepeatedFailure,
	PatternFailingVerifications,
	PatternRepeatedError,
	PatternRepeatedObservation,
	PatternAlternation,
	PatternIdleTurns,
}

// WriteRequirement is the requirement a case that needs an applied change to
// its workspace gets (cases.Case.RequiresWrite). The stop decider uses the
// same ID.
const WriteRequirement events.RequirementID = "workspace-write"

// taskCompleteTool is the tool whose call carries the actor's intent. It is
// a claim, not work: it neither earns progress nor forms a repeat signature.
const taskCompleteTool = "task_complete"

// Policy is what the stall handler needs to know about a run's case: its
// thresholds (a threshold of 0 disables its pattern), its repair budget, the
// admitted escalation target and what the case requires. The service builds
// it from the case under its treatment.
type Policy struct {
	// RepeatedFailure: consecutive failures of one declared check on one
	// workspace content that arm the pattern.
	RepeatedFailure int
	// RepeatedObservation: consecutive tool turns with the same calls and
	// byte-identical observations.
	RepeatedObservation int
	// RepeatedError: consecutive tool turns with the same calls ending in
	// the same error codes.
	RepeatedError int
	// IdleTurns: consecutive turns that did no work.
	IdleTurns int
	// Alternation: A-B cycles of two alternating tool turns.
	Alternation int
	// FailingVerifications: turns with a failing declared check and no clean
	// pass since.
	FailingVerifications int
	// RepairBudget is how many retries an episode grants before repair ends.
	RepairBudget int
	// EscalateTo is the admitted escalation target; empty means repair ends
	// with stop.
	EscalateTo string
	// Requirements are what done means, in the case's order. A stall stop
	// lists every one that is not shown met.
	Requirements []Requirement
	// FixtureDigest is the workspace digest the run started from, if known:
	// a workspace changed back to it holds no applied change.
	FixtureDigest events.Digest
}

// Requirement is one thing done must show. Check names the declared check
// that proves it; Write marks the need for an applied workspace change.
// A requirement with neither can only be accepted on the actor's evidence,
// which the stall handler never does.
type Requirement struct {
	ID    events.RequirementID // the requirement's ID, as unmet lists name it
	Check string               // the declared check that proves it, if any
	Write bool                 // met by an applied change that stands
}
