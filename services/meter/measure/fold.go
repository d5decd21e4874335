package measure

import (
	"slices"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
)

// Log is what a report reads of one suite's facts.
type Log struct {
	Suite     string
	Submitted *events.SuiteSubmitted
	// Runs holds every run of the suite by run ID, whether or not the
	// roster plans it (the report reads only the planned ones).
	Runs map[string]*Attempt
	// Reported lists the suite.reported facts, in log order.
	Reported []events.SuiteReported
	// Stopped is the suite's suite.stopped, if it stopped early.
	Stopped *events.SuiteStopped
	// Control is the fold of the suite's operator controls
	// (suite.controlled).
	Control projections.SuiteControl
	// RetriedBy maps a run to the run that retries it (factline retry).
	RetriedBy map[string]string
	// shared holds one copy of each of the values many runs repeat (case,
	// treatment and identity digests, an identity's components), which
	// every decoded fact brings a copy of its own.
	shared sharedValues
	// applied counts the facts folded, to order attempts by when their
	// grade arrived.
	applied int
}

// Attempt is one run as the report sees it.
type Attempt struct {
	// Requested is the run's first run.requested; its case, treatment,
	// digests and components are shared with the other runs that repeat
	// them (sharedValues): read them, never change them.
	Requested *events.RunRequested
	Claimed   bool
	// Ended is the run's first run.ended, without its last evidence and
	// next action (what a run's page shows, never what a report counts).
	Ended *events.RunEnded
	// Snapshot is the newest sealed candidate ("" when none).
	Snapshot events.Digest
	// Verdicts holds the newest revision of the grade of each snapshot
	// graded, one a snapshot, in the order each was first graded: a run
	// seals few candidates, and a map of them cost a kilobyte a run. Each
	// is what the report reads of it (compactVerdict); a Log's share their
	// instrument lists with other runs' (sharedValues.verdict): read them,
	// never change them.
	Verdicts []events.GraderVerdict
	// ClaimedIdentity is the agent identity the newest run.claimed that
	// recorded one says ran (empty when none did).
	ClaimedIdentity events.Digest
	// Conflicts holds the grade.conflict facts, in log order: later checks
	// that disagreed with an earlier revision.
	Conflicts []events.GradeConflict
	// Judged holds the evaluators' model calls on the attempt: the
	// grader's judge instruments and the stop decider's reviewer.
	Judged []events.JudgeCall
	// GradedAt is when (in facts folded) its newest verdict arrived: the
	// order in which a suite's early stopping sees its pairs.
	GradedAt int
	// CachedCalls counts the model calls the response cache answered, and
	// CachedTokens their tokens (input and output, as first reported).
	CachedCalls  int
	CachedTokens uint64
	// Replies sums the usage the run's model calls reported: its
	// model.replied facts and its summaries (context.summarised), which
	// run.ended's spent counts too.
	Replies ReplyUsage
	// Summaries holds the usage of the run's context summaries (nil where
	// a provider reported none): context cost, shown apart.
	Summaries []*events.Usage
	// Parent is set on a child run (run.delegated): the run and call it
	// belongs to. A child is never an attempt of the suite; its usage is
	// reported as part of its parent's (delegationOf).
	Parent *events.ParentRef
}

// ReplyUsage sums the usage of a run's model replies: the tokens split
// into input and output, and the parts of them a provider may report
// (prompt-cached input, reasoning output), each with the count of replies
// that left it unknown.
type ReplyUsage struct {
	// Calls counts the replies; Unknown those without usage.
	Calls, Unknown int
	Input, Output  uint64
	// CachedInput sums the replies' cached_input_tokens; CachedInputUnknown
	// counts replies with usage that did not report it.
	CachedInput        uint64
	CachedInputUnknown int
	// Reasoning sums the replies' reasoning_tokens; ReasoningUnknown counts
	// replies with usage that did not report it.
	Reasoning        uint64
	ReasoningUnknown int
	// Cost sums the replies' costs; CostUnknown counts the replies whose
	// cost is unknown (no usage, or usage without a cost).
	Cost        uint64
	CostUnknown int
}

// plus is the sum of two runs' reply usage.
func (r ReplyUsage) plus(o ReplyUsage) ReplyUsage {
	return ReplyUsage{Calls: r.Calls + o.Calls, Unknown: r.Unknown + o.Unknown, Input: r.Input + o.Input, Output: r.Output + o.Output,
		CachedInput: r.CachedInput + o.CachedInput, CachedInputUnknown: r.CachedInputUnknown + o.CachedInputUnknown,
		Reasoning: r.Reasoning + o.Reasoning, ReasoningUnknown: r.ReasoningUnknown + o.ReasoningUnknown,
		Cost: r.Cost + o.Cost, CostUnknown: r.CostUnknown + o.CostUnknown}
}

// add folds one reply's usage.
func (r *ReplyUsage) add(u *events.Usage) {
	r.Calls++
	if u == nil {
		r.Unknown++
		r.CostUnknown++
		return
	}
	if u.Cost == nil {
		r.CostUnknown++
	} else {
		r.Cost += *u.Cost
	}
	r.Input += u.InputTokens
	r.Output += u.OutputTokens
	if u.CachedInputTokens == nil {
		r.CachedInputUnknown++
	} else {
		r.CachedInput += *u.CachedInputTokens
	}
	if u.ReasoningTokens == nil {
		r.ReasoningUnknown++
	} else {
		r.Reasoning += *u.ReasoningTokens
	}
}

// NewLog returns the empty state of one suite.
func NewLog(suite string) *Log {
	return &Log{Suite: suite, Runs: map[string]*Attempt{}, Control: projections.SuiteControl{Suite: suite, State: projections.SuiteActive}}
}

// Apply folds one fact of the suite. Facts of other suites are ignored.
func (l *Log) Apply(f events.Fact) {
	if f.Suite != l.Suite {
		return
	}
	l.applied++
	switch b := f.Body.(type) {
	case events.SuiteSubmitted:
		if l.Submitted == nil { // the first submission fixes the roster
			l.Submitted = &b
		}
		return
	case events.SuiteReported:
		l.Reported = append(l.Reported, b)
		return
	case events.SuiteStopped:
		if l.Stopped == nil {
			l.Stopped = &b
		}
		return
	case events.SuiteControlled:
		l.Control.Apply(f)
		return
	}
	if f.Run == events.SuiteScope {
		return
	}
	a := l.Runs[f.Run]
	if a == nil {
		a = newAttempt()
		l.Runs[f.Run] = a
	}
	f.Body = l.shared.body(f.Body)
	if b, ok := f.Body.(events.GradeVerdict); ok {
		// What the report reads of a grade, with one copy of the sealed
		// snapshot a run and of the instrument lists many grades repeat.
		b.Verdict = l.shared.verdict(compactVerdict(b.Verdict), a.Snapshot)
		f.Body = b
	}
	if b, ok := f.Body.(events.RunRequested); ok && a.Requested == nil && b.RetryOf != "" {
		if l.RetriedBy == nil {
			l.RetriedBy = map[string]string{}
		}
		if _, taken := l.RetriedBy[b.RetryOf]; !taken {
			l.RetriedBy[b.RetryOf] = f.Run
		}
	}
	a.apply(f, l.applied)
}

func newAttempt() *Attempt { return &Attempt{} }

// apply folds one fact of the attempt's run; at is how many facts of the
// suite were folded with it, recorded as GradedAt when it is the newest
// verdict.
func (a *Attempt) apply(f events.Fact, at int) {
	switch b := f.Body.(type) {
	case events.RunRequested:
		if a.Requested == nil {
			a.Requested = &b
		}
	case events.RunDelegated:
		if a.Parent == nil {
			p := b.Parent
			a.Parent = &p
		}
	case events.RunClaimed:
		a.Claimed = true
		if b.Identity != "" {
			a.ClaimedIdentity = b.Identity
		}
	case events.RunEnded:
		if a.Ended == nil { // a run ends once; a second end never rewrites the first
			b.LastEvidence, b.NextAction = nil, "" // the report reads neither
			a.Ended = &b
		}
	case events.CandidateSealed:
		a.Snapshot = b.SnapshotDigest
	case events.GradeVerdict:
		// Compact (Log.Apply has compacted and shared it already; the
		// Counter's runs in flight have not).
		v := compactVerdict(b.Verdict)
		i := slices.IndexFunc(a.Verdicts, func(old events.GraderVerdict) bool { return old.SnapshotID == v.SnapshotID })
		switch {
		case i < 0:
			a.Verdicts = append(a.Verdicts, v)
			a.GradedAt = at
		case v.Revision > a.Verdicts[i].Revision:
			a.Verdicts[i] = v
			a.GradedAt = at
		}
	case events.GradeConflict:
		a.Conflicts = append(a.Conflicts, b)
	case events.GradeInstrument:
		if b.Judge != nil {
			a.Judged = append(a.Judged, *b.Judge)
		}
	case events.StopDecided:
		if b.Judge != nil {
			a.Judged = append(a.Judged, *b.Judge)
		}
	case events.ContextSummarised:
		a.Replies.add(b.Usage)
		a.Summaries = append(a.Summaries, b.Usage)
	case events.ModelReplied:
		a.Replies.add(b.Usage)
		if b.Cached != nil {
			a.CachedCalls++
			if b.Usage != nil {
				a.CachedTokens += b.Usage.InputTokens + b.Usage.OutputTokens
			}
		}
	}
}

// Suites is the state of the suites projection: one Log per suite.
type Suites map[string]*Log

// SuitesFold rebuilds every suite's report from the log: the projection of
// the meter stick. Its view is the list of reports, by suite name.
var SuitesFold = projections.Fold[Suites]{
	Key:  "suites",
	Help: "the meter stick's report of every suite: outcomes, pass rates with intervals, usage and comparisons",
	Init: func() Suites { return Suites{} },
	Apply: func(s Suites, f events.Fact) Suites {
		l := s[f.Suite]
		if l == nil {
			l = NewLog(f.Suite)
			s[f.Suite] = l
		}
		l.Apply(f)
		return s
	},
	View: func(s Suites) any {
		names := make([]string, 0, len(s))
		for n, l := range s {
			if l.Submitted != nil {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		out := make([]Report, len(names))
		for i, n := range names {
			out[i] = Build(s[n])
		}
		return out
	},
}

func init() { projections.Register(SuitesFold) }
