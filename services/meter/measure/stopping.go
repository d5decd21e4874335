package measure

import (
	"cmp"
	"math"
	"slices"

	"github.com/factline/factline/events"
	"github.com/factline/factline/stats"
)

// Stopping is a suite's early-stopping rule (suites.Stopping, which this
// core cannot import): stop once the anytime-valid confidence sequence for
// the paired difference B − A excludes zero, or lies within Margin of it.
//
// The difference is of the pass rate, or of Scorer's values on [0, 1] when
// the rule names a scorer (pairs without a value under both stay out).
type Stopping struct {
	A, B       string
	Confidence float64
	MinPairs   int
	Margin     float64
	Scorer     string
}

// StopDecision decides whether the suite stops early now. It feeds the
// sequence the graded pairs of A and B (both attempts passed or failed,
// paired on case and trial) in the order their second grade arrived in
// the log, so that a replay of the log decides the same. A suite already
// stopped, or with fewer than MinPairs pairs, does not stop (again).
func StopDecision(l *Log, s Stopping) (events.SuiteStopped, bool) {
	if l.Stopped != nil || l.Submitted == nil {
		return events.SuiteStopped{}, false
	}
	r := Build(l)
	type key struct {
		c string
		t uint32
	}
	type side struct {
		score float64
		at    int
	}
	seen := map[string]map[key]side{s.A: {}, s.B: {}}
	for _, row := range r.Attempts {
		m, ok := seen[row.Treatment]
		if !ok || (row.Outcome != OutcomePassed && row.Outcome != OutcomeFailed) {
			continue
		}
		score := 0.0
		if row.Outcome == OutcomePassed {
			score = 1
		}
		if s.Scorer != "" {
			v, ok := valueOf(row, s.Scorer)
			if !ok {
				continue // no value: the pair says nothing of the scorer
			}
			score = v
		}
		at := 0
		if a := l.Runs[row.Run]; a != nil {
			at = a.GradedAt()
		}
		m[key{row.Case, row.Trial}] = side{score, at}
	}
	var pairs []stopPair
	for k, a := range seen[s.A] {
		if b, ok := seen[s.B][k]; ok {
			pairs = append(pairs, stopPair{b.score - a.score, max(a.at, b.at)})
		}
	}
	return decideStop(pairs, s)
}

// stopPair is a graded pair of A and B: the difference B − A, and when
// its second grade arrived.
type stopPair struct {
	d  float64
	at int
}

// decideStop feeds the pairs to the confidence sequence in the order
// their second grade arrived and says whether the suite stops.
func decideStop(pairs []stopPair, s Stopping) (events.SuiteStopped, bool) {
	if len(pairs) < max(s.MinPairs, 1) {
		return events.SuiteStopped{}, false
	}
	slices.SortFunc(pairs, func(x, y stopPair) int { return cmp.Compare(x.at, y.at) })
	seq := stats.NewPairedSequence(1 - s.Confidence)
	for _, p := range pairs {
		seq.Add(p.d)
	}
	reason := ""
	switch {
	case seq.ExcludesZero():
		reason = events.StopDifference
	case s.Margin > 0 && seq.Within(s.Margin):
		reason = events.StopEquivalence
	default:
		return events.SuiteStopped{}, false
	}
	lo, hi := seq.Interval()
	return events.SuiteStopped{
		Comparison: s.A + " vs " + s.B, Reason: reason, Pairs: uint32(len(pairs)),
		Confidence: uint32(math.Round(s.Confidence * 1000)),
		Low:        int32(math.Floor(lo * 1000)), High: int32(math.Ceil(hi * 1000)), Scorer: s.Scorer,
	}, true
}

// StopDecision is StopDecision of the log the counter folded: the same
// pairs, in the same order, from what the counter keeps of each attempt.
// It costs O(planned attempts); call it again only when GradeChanges
// moved.
func (c *Counter) StopDecision(s Stopping) (events.SuiteStopped, bool) {
	if c.stopped || c.sub == nil {
		return events.SuiteStopped{}, false
	}
	ta, okA := c.treats[s.A]
	tb, okB := c.treats[s.B]
	if !okA || !okB {
		return events.SuiteStopped{}, false
	}
	// As the report's rows do, the last of repeated IDs wins.
	a, b := ta[len(ta)-1], tb[len(tb)-1]
	nt, pairs := len(c.sub.Treatments), len(c.roster.prefix)
	score := func(r rowCode) float64 {
		if r.outcome() == OutcomePassed {
			return 1
		}
		return 0
	}
	var out []stopPair
	visit := func(i int, code rowCode) {
		pair := i % pairs
		ci := pair / nt
		if pair%nt != a || !code.graded() {
			return
		}
		if ids := c.cases[c.sub.Cases[ci].ID]; ids[len(ids)-1] != ci {
			return
		}
		j := i - a + b
		other := c.codes.get(j)
		if !other.graded() {
			return
		}
		out = append(out, stopPair{score(other) - score(code), int(max(c.gradedAt.get(i), c.gradedAt.get(j)))})
	}
	if c.codes.sparse != nil {
		for i, code := range c.codes.sparse {
			visit(i, code)
		}
	} else {
		for i, code := range c.codes.dense {
			visit(i, code)
		}
	}
	return decideStop(out, s)
}
