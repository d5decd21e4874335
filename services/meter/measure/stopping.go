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
			at = a.GradedAt
		}
		m[key{row.Case, row.Trial}] = side{score, at}
	}
	type pair struct {
		d  float64
		at int
	}
	var pairs []pair
	for k, a := range seen[s.A] {
		if b, ok := seen[s.B][k]; ok {
			pairs = append(pairs, pair{b.score - a.score, max(a.at, b.at)})
		}
	}
	if len(pairs) < max(s.MinPairs, 1) {
		return events.SuiteStopped{}, false
	}
	slices.SortFunc(pairs, func(x, y pair) int { return cmp.Compare(x.at, y.at) })
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
