// Package stop is the stop decider's pure core: a fold over a run's facts
// and the one function that decides, for a completed turn, whether the run
// continues or finishes (done, blocked or incomplete). It validates the
// actor's cited evidence, orders the declared checks, and never lets a
// proposal, a judge or a stall turn into done without the checks. The
// package does no I/O and imports only events and the standard library.
// docs/stopping.md states the rules.
package stop

import (
	"strconv"

	"github.com/factline/factline/events"
)

// WriteRequirement is the requirement a case that needs an applied change to
// its workspace gets. The stall handler uses the same ID.
const WriteRequirement events.RequirementID = "workspace-write"

// taskCompleteTool is the tool whose call carries the actor's claim; its
// dispatch is the claim itself and proves nothing.
const taskCompleteTool = "task_complete"

// Policy is what the stop decider needs to know about a run's case. The
// service builds it from the case under its treatment.
type Policy struct {
	// Checks are the case's declared checks in declared order: the order in
	// which the decider asks for them.
	Checks []Check
	// Requirements are what done means.
	Requirements []Requirement
	// FixtureDigest is the workspace digest the run started from, if known:
	// a workspace changed back to it holds no applied change.
	FixtureDigest events.Digest
	// ActorModel names the model acting in the run (provider/name); a judge
	// with this name is ignored, since a model does not review its own work.
	ActorModel string
}

// Check is one declared check.
type Check struct {
	ID      string // the check's ID, as dispatches name it
	Command string // what runs it, for feedback that asks for it
}

// Requirement is one thing done must show. Check names the declared check
// whose executed pass at the current epoch proves it; Write marks the need
// for an applied workspace change; a requirement with neither is accepted on
// the actor's valid evidence.
type Requirement struct {
	ID    events.RequirementID // the requirement's ID, as decisions name it
	Check string               // the declared check that proves it, if any
	Write bool                 // met by an applied change that stands
}

// evidenceOnly reports whether only the actor's evidence can show r.
func (r Requirement) evidenceOnly() bool { return r.Check == "" && !r.Write }

// needsWrite reports whether the policy requires an applied change.
func (p Policy) needsWrite() bool {
	for _, r := range p.Requirements {
		if r.Write {
			return true
		}
	}
	return false
}

func (p Policy) command(check string) string {
	for _, c := range p.Checks {
		if c.ID == check {
			return c.Command
		}
	}
	return ""
}

// DecisionID is the ID of the one stop decision for a turn, also its
// message deduplication ID: "<run>/<turn>/stop".
func DecisionID(run string, turn uint32) string {
	return events.MessageID(run, events.KindStopDecided, strconv.FormatUint(uint64(turn), 10))
}
