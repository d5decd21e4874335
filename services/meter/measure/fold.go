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
	// shared holds one copy of each of the values many runs repeat (a
	// request, an end's status and reason, a grade), which every decoded
	// fact brings a copy of its own.
	shared sharedValues
	// applied counts the facts folded, to order attempts by when their
	// grade arrived.
	applied int
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
	if b, ok := f.Body.(events.RunRequested); ok && a.Requested == nil && b.RetryOf != "" {
		if l.RetriedBy == nil {
			l.RetriedBy = map[string]string{}
		}
		if _, taken := l.RetriedBy[b.RetryOf]; !taken {
			l.RetriedBy[b.RetryOf] = f.Run
		}
	}
	a.apply(&l.shared, f, l.applied)
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
