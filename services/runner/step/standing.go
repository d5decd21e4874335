package step

import (
	"maps"

	"github.com/factline/factline/events"
)

// Standing is where a run stands, kept as a fold of its log by the attempt
// that drives it: its Progress and what the runner checks at every step
// (spend, queue wait, operations of unknown outcome, claims, the end). A
// step folds only the facts since the attempt's last look, so a turn's
// cost does not grow with the run (issue 38): reading all of it again,
// as ReadProgress and its siblings do, costs the whole log at every step.
//
// The log stays the state. Catch folds on only while the facts it is
// given extend the ones it folded (the fact it stopped after is still at
// its place); any other log (a takeover's, a replica behind, the log of
// another run) is folded again from its start. Each reading equals the
// batch function's over the same facts (ReadProgress, Tally, QueueWaitMs,
// UnknownOperations, CurrentLease, FinishDecided), at every prefix: the
// first three share its fold of one fact, and a property test checks all.
//
// A Standing is not safe for concurrent use; an attempt drives its run
// from one goroutine.
type Standing struct {
	n    int         // facts folded
	last events.Fact // the last of them, whose ID is compared
	prog Progress    // ReadProgress
	tal  tally       // Tally
	unk  unknowns    // UnknownOperations
	wait uint64      // QueueWaitMs
	// lease is the highest claim's lease (CurrentLease) and claimAt the
	// index of the newest claim holding it (-1: none).
	lease   uint32
	claimAt int
	// finished is whether the last stop.decided finishes the run
	// (FinishDecided).
	finished bool
	ended    bool // run.ended is folded
	// folded counts every fact folded, rebuilds included: the work the
	// fold left to do.
	folded int64
}

// NewStanding returns the standing of a run with no facts.
func NewStanding() *Standing {
	s := &Standing{}
	s.reset()
	return s
}

func (s *Standing) reset() {
	folded := s.folded
	*s = Standing{prog: startProgress(), tal: newTally(), unk: newUnknowns(), claimAt: -1, folded: folded}
}

// Catch brings the standing up to facts, a run's log from its first fact:
// it folds the facts after those already folded when facts extends them,
// and folds facts again from the start otherwise. It returns how many
// facts it folded.
func (s *Standing) Catch(facts []events.Fact) int {
	if s.n > len(facts) || s.n > 0 && facts[s.n-1].ID != s.last.ID {
		s.reset()
	}
	from := s.n
	for _, f := range facts[from:] {
		s.apply(f)
	}
	return len(facts) - from
}

// apply folds the run's next fact.
func (s *Standing) apply(f events.Fact) {
	s.prog.apply(s.n, f)
	s.tal.apply(f)
	s.unk.apply(f)
	switch b := f.Body.(type) {
	case events.ModelReplied:
		s.wait += b.QueueWaitMs
	case events.RunClaimed:
		if b.Lease >= s.lease {
			s.lease, s.claimAt = b.Lease, s.n
		}
	case events.StopDecided:
		_, s.finished = b.Decision.Result.Variant().(events.StopFinish)
	case events.RunEnded:
		s.ended = true
	}
	s.n++
	s.last = f
	s.folded++
}

// Len is how many facts of the run the standing has folded.
func (s *Standing) Len() int { return s.n }

// Folded is how many facts the standing has folded in all, counting each
// fact folded again after a rebuild.
func (s *Standing) Folded() int64 { return s.folded }

// Progress is the run's progress (ReadProgress). Its maps are the
// caller's: the standing folds on without writing into them.
func (s *Standing) Progress() Progress {
	p := s.prog
	p.Intended, p.Completed, p.Approvals = maps.Clone(p.Intended), maps.Clone(p.Completed), maps.Clone(p.Approvals)
	return p
}

// Spend is what the run has consumed (Tally).
func (s *Standing) Spend() Spend { return s.tal.spend() }

// QueueWaitMs is the time the run's model calls waited for a fleet-wide
// limit's slots (QueueWaitMs).
func (s *Standing) QueueWaitMs() uint64 { return s.wait }

// UnknownOperations lists the run's operations of unknown outcome
// (UnknownOperations). The slice is the caller's to read, never to write.
func (s *Standing) UnknownOperations() []UnknownOp { return s.unk.ops[:len(s.unk.ops):len(s.unk.ops)] }

// Lease is the highest lease any claim of the run took (CurrentLease).
func (s *Standing) Lease() uint32 { return s.lease }

// NewestClaim is the index, among the facts folded, of the newest claim
// holding the highest lease; false when the run has no claim.
func (s *Standing) NewestClaim() (int, bool) { return s.claimAt, s.claimAt >= 0 }

// FinishDecided reports whether the run's last stop.decided finishes it
// (FinishDecided).
func (s *Standing) FinishDecided() bool { return s.finished }

// Ended reports whether the run's run.ended is folded.
func (s *Standing) Ended() bool { return s.ended }
