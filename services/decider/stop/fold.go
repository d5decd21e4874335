package stop

import (
	"strings"

	"github.com/factline/factline/events"
)

// State is the stop decider's view of one run. Build it with New and feed
// it the run's facts in log order with Fold. Fold reuses the state's
// storage: treat the state passed in as consumed and keep the one returned.
type State struct {
	run         string
	generation  uint32
	steers      uint32 // steers accepted so far
	instruction string // the latest steer's instruction

	epoch     uint64        // current source epoch: 1 for the fixture
	digest    events.Digest // workspace digest after the last dispatch that named one
	wrote     bool
	lastWrite events.EvidenceRef // the latest applied change
	writeGen  uint32             // its task generation

	dispatches map[events.EvidenceRef]dispatchRec
	order      []events.EvidenceRef
	facts      map[string]events.Kind // IDs of the run's facts, to explain refs that name one
	checks     map[string]checkRec
	turns      map[uint32]turnRec
}

type dispatchRec struct {
	turn        uint32
	gen         uint32
	tool        string
	check       string
	disposition events.Disposition
	result      string // what the dispatch showed, for listing citable evidence
}

// checkRec is what the run shows about one declared check: its latest
// executed result, and any later attempt that did not execute.
type checkRec struct {
	executed bool
	passed   bool
	epoch    uint64
	gen      uint32
	ref      events.EvidenceRef
	diags    []events.Diagnostic
	later    string // "pending", "not_run" or "unknown" after the executed result
}

type turnRec struct {
	ev  events.RunEvidence
	gen uint32
}

// New returns the empty state.
func New() State {
	return State{
		epoch:      1,
		dispatches: map[events.EvidenceRef]dispatchRec{},
		facts:      map[string]events.Kind{},
		checks:     map[string]checkRec{},
		turns:      map[uint32]turnRec{},
	}
}

// Generation returns the run's current task generation.
func (s State) Generation() uint32 { return s.generation }

// HasTurn reports whether the state holds the evidence of turn n.
func (s State) HasTurn(n uint32) bool { _, ok := s.turns[n]; return ok }

// Fold folds one fact of the run into the state. Facts must come in log
// order.
func Fold(s State, f events.Fact) State {
	if s.dispatches == nil {
		s = New()
	}
	if s.run == "" {
		s.run = f.Run
	}
	s.facts[f.ID.String()] = f.Kind()
	s.generation = max(s.generation, f.TaskGeneration)
	switch b := f.Body.(type) {
	case events.ControlAccepted:
		// A steer's acceptance starts the next generation; its
		// task.generation follows with that number. A decision made
		// between the two already finds the turn's proposal stale.
		if b.Control.Signal == events.SignalSteer {
			// Generations count from 1, one more per accepted steer.
			s.steers++
			s.generation, s.instruction = max(s.generation, 1+s.steers), b.Instruction
		}
	case events.TaskGenerationStarted:
		if b.Generation >= s.generation {
			s.generation, s.instruction = b.Generation, b.Instruction
		}
	case events.TurnCompleted:
		s.completeTurn(f, b.Evidence)
	}
	return s
}

func (s *State) completeTurn(f events.Fact, ev events.RunEvidence) {
	gen := ev.TaskGeneration
	if gen == 0 {
		gen = f.TaskGeneration
	}
	s.turns[ev.Turn] = turnRec{ev: ev, gen: gen}
	for _, d := range ev.Dispatches {
		if d.Mutation == events.MutationApplied {
			s.epoch++
			s.wrote, s.lastWrite, s.writeGen = true, d.EvidenceRef, gen
		}
		if d.Digest != "" {
			s.digest = d.Digest
		}
		rec := dispatchRec{turn: ev.Turn, gen: gen, tool: d.Tool, check: d.Check, disposition: d.Disposition}
		switch v := d.Verification.Variant().(type) {
		case events.VerifyPassed:
			s.epoch = max(s.epoch, v.SourceEpoch)
			rec.result = "passed at epoch " + itoa(v.SourceEpoch)
			if d.Check != "" {
				s.checks[d.Check] = checkRec{executed: true, passed: true, epoch: v.SourceEpoch, gen: gen, ref: d.EvidenceRef}
			}
		case events.VerifyFailed:
			s.epoch = max(s.epoch, v.SourceEpoch)
			rec.result = "failed at epoch " + itoa(v.SourceEpoch)
			if d.Check != "" {
				s.checks[d.Check] = checkRec{executed: true, epoch: v.SourceEpoch, gen: gen, ref: d.EvidenceRef, diags: v.Diagnostics}
			}
		case events.VerifyPending, events.VerifyNotRun, events.VerifyUnknown:
			if d.Check != "" {
				c := s.checks[d.Check]
				c.later = d.Verification.Type()
				s.checks[d.Check] = c
			}
		default:
			if d.Mutation == events.MutationApplied {
				rec.result = "changed the workspace"
			}
		}
		if _, seen := s.dispatches[d.EvidenceRef]; !seen {
			s.order = append(s.order, d.EvidenceRef)
		}
		s.dispatches[d.EvidenceRef] = rec
	}
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// checkState says where a declared check stands for done.
type checkState int

const (
	checkMissing checkState = iota // no executed result in the current task generation
	checkPassed                    // an executed pass at the current epoch
	checkStale                     // an executed pass at an older epoch
	checkFailed                    // the latest executed result is a failure
)

func (s State) checkState(id string) (checkState, checkRec) {
	c, ok := s.checks[id]
	switch {
	case !ok || !c.executed || c.gen != s.generation:
		return checkMissing, c
	case !c.passed:
		return checkFailed, c
	case c.epoch < s.epoch:
		return checkStale, c
	}
	return checkPassed, c
}

// writeStands reports whether an applied change to the workspace stands: it
// was applied, and the workspace is not back at the fixture.
func (s State) writeStands(p Policy) bool {
	return s.wrote && (p.FixtureDigest == "" || s.digest == "" || s.digest != p.FixtureDigest)
}

// refFact returns the kind of the run's fact a ref names ("<fact-id>" or
// "<fact-id>/<call>"), if it names one.
func (s State) refFact(ref events.EvidenceRef) (events.Kind, bool) {
	id, _, _ := strings.Cut(string(ref), "/")
	k, ok := s.facts[id]
	return k, ok
}
