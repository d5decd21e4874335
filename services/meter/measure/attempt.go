package measure

import (
	"slices"

	"github.com/factline/factline/events"
)

// Attempt is one run as the report sees it, packed: a suite's fold holds
// one for every run that ended until the suite is reported, so what it
// keeps a run is what a 100,000-run suite holds 100,000 times. The values
// the runs of a case × treatment pair repeat (the request, the end's
// status and reason, the grade) are shared, the rest is numbers, and what
// few runs have (more grades, conflicts, judges, summaries, cache hits, a
// parent) is behind one pointer. Rows are made of it only when a report
// is built (Build, row).
type Attempt struct {
	// Requested is the run's first run.requested without its trial (which
	// Request puts back) and retry_of (Log.RetriedBy has it), shared with
	// the other runs that request the same: read it, never change it.
	Requested *events.RunRequested
	// shape is what the runs of a pair mostly share past their request:
	// their end's status and reason, their grade, which of the values
	// below are there (nil: none yet).
	shape *attemptShape
	more  *attemptMore
	// snapshot is the newest sealed candidate's digest, packed (has
	// flagSnapshot; a digest of another form is more.snapshot).
	snapshot [32]byte
	// spentMillis is run.ended's; its tokens and cost, when known
	// (flagTokens, flagCost), are nearly always its replies' sums, and are
	// held apart (in more, flagTokensApart, flagCostApart) only when not.
	spentMillis uint64
	// replies is what ReplyUsage holds of every run: the rest (cached
	// and reasoning tokens) is in more.
	replyInput, replyOutput, replyCost uint64
	replyCalls, replyUnknown           uint32
	replyCostUnknown                   uint32
	trial, spentSteps                  uint32
	// gradedAt is GradedAt, saturated at 2^32-1 facts.
	gradedAt uint32
}

// attemptShape is the part of an Attempt that the runs of a case ×
// treatment pair mostly have the same of: one kept copy of each
// (sharedValues.shape) serves them all.
type attemptShape struct {
	// end is the run's first run.ended's status and reason (nil until it
	// ends).
	end *endShape
	// grade is the newest revision of the grade of the run's sealed
	// snapshot, without its snapshot and revision (revision); nil when
	// that grade is not there yet, or the run sealed none: every other
	// grade is in attemptMore.verdicts.
	grade    *events.GraderVerdict
	revision uint32
	flags    attemptFlags
	// claimed is the identity the newest run.claimed that recorded one
	// says ran: the runner's, the same for the runs of a pair.
	claimed events.Digest
}

// attemptFlags says which of an Attempt's packed values are there.
type attemptFlags uint8

const (
	flagClaimed attemptFlags = 1 << iota
	flagSnapshot
	flagTokens
	flagCost
	flagTokensApart
	flagCostApart
)

// attemptMore is what few runs have.
type attemptMore struct {
	snapshot events.Digest // a sealed digest not in sha256's form
	// verdicts are the grades of snapshots other than the sealed one, or
	// of a run that sealed none (compact, their instruments shared:
	// graded).
	verdicts  []events.GraderVerdict
	conflicts []events.GradeConflict
	judged    []events.JudgeCall
	summaries []*events.Usage
	parent    *events.ParentRef
	// cachedInputReported and reasoningReported count the replies with
	// usage that reported each part; their sums are beside them.
	cachedInputReported, reasoningReported uint32
	cachedInput, reasoning                 uint64
	cachedCalls                            int
	cachedTokens                           uint64
	// spentTokens and spentCost are run.ended's where they are not its
	// replies' sums.
	spentTokens, spentCost uint64
}

// endShape is what a report reads of run.ended apart from its numbers.
type endShape struct {
	status events.RunStatus
	reason string
}

func newAttempt() *Attempt { return &Attempt{} }

// shaped returns the attempt's shape (the zero one before any).
func (a *Attempt) shaped() attemptShape {
	if a.shape == nil {
		return attemptShape{}
	}
	return *a.shape
}

// has says whether the attempt's shape has every flag of f.
func (a *Attempt) has(f attemptFlags) bool { return a.shape != nil && a.shape.flags&f == f }

// extra returns the attempt's rare part, made on first need.
func (a *Attempt) extra() *attemptMore {
	if a.more == nil {
		a.more = &attemptMore{}
	}
	return a.more
}

// apply folds one fact of the attempt's run, sharing what other runs
// repeat through s; at is how many facts of the suite were folded with
// it, recorded as GradedAt when it is the newest verdict.
func (a *Attempt) apply(s *sharedValues, f events.Fact, at int) {
	switch b := f.Body.(type) {
	case events.RunRequested:
		if a.Requested == nil {
			a.trial = b.Trial
			a.Requested = s.request(b)
		}
	case events.RunDelegated:
		if a.more == nil || a.more.parent == nil {
			p := b.Parent
			a.extra().parent = &p
		}
	case events.RunClaimed:
		sh := a.shaped()
		sh.flags |= flagClaimed
		if b.Identity != "" {
			sh.claimed = share(s, b.Identity)
		}
		a.shape = s.shape(sh)
	case events.RunEnded:
		if sh := a.shaped(); sh.end == nil { // a run ends once; a second end never rewrites the first
			sh.end = s.end(b.Status, b.Reason)
			a.spentSteps, a.spentMillis = b.Spent.Steps, b.Spent.Millis
			if t := b.Spent.Tokens; t != nil {
				sh.flags |= flagTokens
				if *t != a.replyInput+a.replyOutput {
					sh.flags |= flagTokensApart
					a.extra().spentTokens = *t
				}
			}
			if c := b.Spent.Cost; c != nil {
				sh.flags |= flagCost
				if *c != a.replyCost {
					sh.flags |= flagCostApart
					a.extra().spentCost = *c
				}
			}
			a.shape = s.shape(sh)
		}
	case events.CandidateSealed:
		a.seal(s, b.SnapshotDigest)
	case events.GradeVerdict:
		a.graded(s, compactVerdict(b.Verdict), at)
	case events.GradeConflict:
		m := a.extra()
		m.conflicts = append(m.conflicts, b)
	case events.GradeInstrument:
		if b.Judge != nil {
			m := a.extra()
			m.judged = append(m.judged, *b.Judge)
		}
	case events.StopDecided:
		if b.Judge != nil {
			m := a.extra()
			m.judged = append(m.judged, *b.Judge)
		}
	case events.ContextSummarised:
		a.addReply(s, b.Usage)
		m := a.extra()
		m.summaries = append(m.summaries, b.Usage)
	case events.ModelReplied:
		a.addReply(s, b.Usage)
		if b.Cached != nil {
			m := a.extra()
			m.cachedCalls++
			if b.Usage != nil {
				m.cachedTokens += b.Usage.InputTokens + b.Usage.OutputTokens
			}
		}
	}
}

// seal records the newest sealed candidate. The grade kept packed is the
// sealed snapshot's: a new snapshot moves it, whole, among the others.
func (a *Attempt) seal(s *sharedValues, d events.Digest) {
	if a.Snapshot() == d {
		return
	}
	sh := a.shaped()
	if sh.grade != nil {
		v := *sh.grade
		v.SnapshotID, v.Revision = a.Snapshot(), sh.revision
		m := a.extra()
		m.verdicts = append(m.verdicts, v)
		sh.grade, sh.revision = nil, 0
	}
	sh.flags &^= flagSnapshot
	if a.more != nil {
		a.more.snapshot = ""
	}
	if packed, ok := packDigest(d); ok {
		a.snapshot, sh.flags = packed, sh.flags|flagSnapshot
	} else if d != "" {
		a.extra().snapshot = d
	}
	a.shape = s.shape(sh)
}

// graded folds a compact verdict: the newest revision of each snapshot's
// grade is kept.
func (a *Attempt) graded(s *sharedValues, v events.GraderVerdict, at int) {
	stamp := func() { a.gradedAt = uint32(min(at, 1<<32-1)) }
	sh := a.shaped()
	if sh.grade != nil && a.snapshotIs(v.SnapshotID) {
		if v.Revision > sh.revision {
			sh.grade, sh.revision = s.grade(v), v.Revision
			a.shape = s.shape(sh)
			stamp()
		}
		return
	}
	var others []events.GraderVerdict
	if a.more != nil {
		others = a.more.verdicts
	}
	i := slices.IndexFunc(others, func(old events.GraderVerdict) bool { return old.SnapshotID == v.SnapshotID })
	v.AttemptID = "" // the run's own ID: the report never reads it
	switch {
	case i < 0 && sh.grade == nil && a.snapshotIs(v.SnapshotID):
		sh.grade, sh.revision = s.grade(v), v.Revision
		a.shape = s.shape(sh)
		stamp()
	case i < 0:
		v.Instruments = s.instrumentsOf(v.Instruments)
		m := a.extra()
		m.verdicts = append(m.verdicts, v)
		stamp()
	case v.Revision > others[i].Revision:
		v.Instruments = s.instrumentsOf(v.Instruments)
		others[i] = v
		stamp()
	}
}

// addReply folds one reply's usage. A reply folded after the run's end
// (never in a run's own order) first sets its spent apart from the sums
// it changes.
func (a *Attempt) addReply(s *sharedValues, u *events.Usage) {
	if sh := a.shaped(); sh.flags&(flagTokens|flagTokensApart) == flagTokens || sh.flags&(flagCost|flagCostApart) == flagCost {
		m := a.extra()
		if sh.flags&(flagTokens|flagTokensApart) == flagTokens {
			m.spentTokens, sh.flags = a.replyInput+a.replyOutput, sh.flags|flagTokensApart
		}
		if sh.flags&(flagCost|flagCostApart) == flagCost {
			m.spentCost, sh.flags = a.replyCost, sh.flags|flagCostApart
		}
		a.shape = s.shape(sh)
	}
	a.replyCalls++
	if u == nil {
		a.replyUnknown++
		a.replyCostUnknown++
		return
	}
	if u.Cost == nil {
		a.replyCostUnknown++
	} else {
		a.replyCost += *u.Cost
	}
	a.replyInput += u.InputTokens
	a.replyOutput += u.OutputTokens
	if u.CachedInputTokens != nil {
		m := a.extra()
		m.cachedInputReported++
		m.cachedInput += *u.CachedInputTokens
	}
	if u.ReasoningTokens != nil {
		m := a.extra()
		m.reasoningReported++
		m.reasoning += *u.ReasoningTokens
	}
}

// Claimed says whether a runner claimed the run.
func (a *Attempt) Claimed() bool { return a.has(flagClaimed) }

// Request returns the run's first run.requested as it was recorded but
// for its retry_of (which Log.RetriedBy holds), with ok false before one
// is folded.
func (a *Attempt) Request() (events.RunRequested, bool) {
	if a.Requested == nil {
		return events.RunRequested{}, false
	}
	r := *a.Requested
	r.Trial = a.trial
	return r, true
}

// Ended returns what the report reads of the run's first run.ended (its
// status, reason and spent; never its last evidence or next action),
// with ok false while it runs.
func (a *Attempt) Ended() (events.RunEnded, bool) {
	sh := a.shaped()
	if sh.end == nil {
		return events.RunEnded{}, false
	}
	e := events.RunEnded{Status: sh.end.status, Reason: sh.end.reason,
		Spent: events.Spent{Steps: a.spentSteps, Millis: a.spentMillis}}
	switch {
	case sh.flags&flagTokensApart != 0:
		e.Spent.Tokens = ptr(a.more.spentTokens)
	case sh.flags&flagTokens != 0:
		e.Spent.Tokens = ptr(a.replyInput + a.replyOutput)
	}
	switch {
	case sh.flags&flagCostApart != 0:
		e.Spent.Cost = ptr(a.more.spentCost)
	case sh.flags&flagCost != 0:
		e.Spent.Cost = ptr(a.replyCost)
	}
	return e, true
}

// endOf is the status and reason of the run's first run.ended (nil while
// it runs), read without making its spent.
func (a *Attempt) endOf() *endShape { return a.shaped().end }

// Snapshot is the newest sealed candidate ("" when none).
func (a *Attempt) Snapshot() events.Digest {
	switch {
	case a.has(flagSnapshot):
		return unpackDigest(a.snapshot)
	case a.more != nil:
		return a.more.snapshot
	}
	return ""
}

// snapshotIs says whether d is the newest sealed candidate, without
// making its string.
func (a *Attempt) snapshotIs(d events.Digest) bool {
	if a.has(flagSnapshot) {
		packed, ok := packDigest(d)
		return ok && packed == a.snapshot
	}
	return d != "" && a.more != nil && a.more.snapshot == d
}

// sealedGrade returns the newest revision of the grade of the run's
// sealed snapshot when it is the packed one.
func (a *Attempt) sealedGrade() (events.GraderVerdict, bool) {
	sh := a.shaped()
	if sh.grade == nil {
		return events.GraderVerdict{}, false
	}
	v := *sh.grade
	v.SnapshotID, v.Revision = a.Snapshot(), sh.revision
	return v, true
}

// Verdicts returns the newest revision of the grade of each snapshot
// graded, one a snapshot: what the report reads of each (compactVerdict),
// their instrument lists shared with other runs' (read them, never change
// them).
func (a *Attempt) Verdicts() []events.GraderVerdict {
	var out []events.GraderVerdict
	if a.more != nil {
		out = slices.Clone(a.more.verdicts)
	}
	if v, ok := a.sealedGrade(); ok {
		out = append(out, v)
	}
	return out
}

// ClaimedIdentity is the agent identity the newest run.claimed that
// recorded one says ran (empty when none did).
func (a *Attempt) ClaimedIdentity() events.Digest { return a.shaped().claimed }

// GradedAt is when (in facts folded) its newest verdict arrived: the
// order in which a suite's early stopping sees its pairs.
func (a *Attempt) GradedAt() int { return int(a.gradedAt) }

// Conflicts holds the grade.conflict facts, in log order: later checks
// that disagreed with an earlier revision.
func (a *Attempt) Conflicts() []events.GradeConflict {
	if a.more == nil {
		return nil
	}
	return a.more.conflicts
}

// Judged holds the evaluators' model calls on the attempt: the grader's
// judge instruments and the stop decider's reviewer.
func (a *Attempt) Judged() []events.JudgeCall {
	if a.more == nil {
		return nil
	}
	return a.more.judged
}

// Summaries holds the usage of the run's context summaries (nil where a
// provider reported none): context cost, shown apart.
func (a *Attempt) Summaries() []*events.Usage {
	if a.more == nil {
		return nil
	}
	return a.more.summaries
}

// Parent is set on a child run (run.delegated): the run and call it
// belongs to. A child is never an attempt of the suite; its usage is
// reported as part of its parent's (delegationOf).
func (a *Attempt) Parent() *events.ParentRef {
	if a.more == nil {
		return nil
	}
	return a.more.parent
}

// Cached counts the model calls the response cache answered, and their
// tokens (input and output, as first reported).
func (a *Attempt) Cached() (calls int, tokens uint64) {
	if a.more == nil {
		return 0, 0
	}
	return a.more.cachedCalls, a.more.cachedTokens
}

// Replies sums the usage the run's model calls reported: its
// model.replied facts and its summaries (context.summarised), which
// run.ended's spent counts too.
func (a *Attempt) Replies() ReplyUsage {
	r := ReplyUsage{Calls: int(a.replyCalls), Unknown: int(a.replyUnknown), Input: a.replyInput, Output: a.replyOutput,
		Cost: a.replyCost, CostUnknown: int(a.replyCostUnknown)}
	withUsage := r.Calls - r.Unknown
	r.CachedInputUnknown, r.ReasoningUnknown = withUsage, withUsage
	if m := a.more; m != nil {
		r.CachedInput, r.CachedInputUnknown = m.cachedInput, withUsage-int(m.cachedInputReported)
		r.Reasoning, r.ReasoningUnknown = m.reasoning, withUsage-int(m.reasoningReported)
	}
	return r
}

// onlyRequested says whether nothing but its run.requested (and replies
// without a cache hit) was folded.
func (a *Attempt) onlyRequested() bool {
	sh := a.shaped()
	if sh.flags&(flagClaimed|flagSnapshot) != 0 || sh.end != nil || sh.grade != nil {
		return false
	}
	m := a.more
	return m == nil || m.snapshot == "" && len(m.verdicts) == 0 && len(m.conflicts) == 0 && len(m.judged) == 0 && m.cachedCalls == 0
}
