package pages

import (
	"slices"
	"time"

	"github.com/factline/factline/services/meter/measure"
)

// SuitesPage lists every suite the log holds with its progress.
type SuitesPage struct {
	Through uint64     `json:"through"`
	Facts   int        `json:"facts"`
	Suites  []SuiteRow `json:"suites"`
	// Bad lists the stored messages left out because they hold no fact of
	// their subject.
	Bad []Bad `json:"bad,omitempty"`
}

// SuiteRow is one suite's progress. For a submitted suite every number is
// the meter's report's (summed over its treatments, or counted from its
// attempt rows); a suite whose runs were requested without a
// suite.submitted has only its runs.
type SuiteRow struct {
	Suite      string   `json:"suite"`
	Submitted  bool     `json:"submitted"`
	Split      string   `json:"split,omitempty"`
	Cases      int      `json:"cases,omitempty"`
	Treatments []string `json:"treatments,omitempty"`
	Trials     uint32   `json:"trials,omitempty"`
	Complete   bool     `json:"complete"`
	Reported   bool     `json:"reported"`
	// StoppedEarly: the suite's stopping rule settled its comparison
	// before every planned attempt ran (suite.stopped).
	StoppedEarly bool `json:"stopped_early"`
	// Controlled is where an operator's controls left the suite
	// (paused, drained, cancelled or active after a resume); empty for a
	// suite never controlled.
	Controlled string    `json:"controlled,omitempty"`
	Planned    int       `json:"planned"`
	Started    int       `json:"started"`
	Ended      int       `json:"ended"`
	Graded     int       `json:"graded"`
	Passed     int       `json:"passed"`
	Failed     int       `json:"failed"`
	Pending    int       `json:"pending"`
	Invalid    int       `json:"invalid"`
	Excluded   int       `json:"excluded"`
	Awaiting   int       `json:"awaiting"`
	Harness    int       `json:"harness_errors"`
	Outcomes   []Count   `json:"outcomes"`
	Runs       int       `json:"runs"`
	Running    int       `json:"running"`
	LastAt     time.Time `json:"last_at"`
}

// Count is how many attempts landed on one outcome.
type Count struct {
	Outcome string `json:"outcome"`
	N       int    `json:"n"`
}

// Suites returns the suites page: suites in name order.
func (m *Model) Suites() SuitesPage {
	p := SuitesPage{Through: m.through, Facts: m.facts, Suites: []SuiteRow{}, Bad: slices.Clone(m.bad)}
	names := make([]string, 0, len(m.suiteSeq))
	for n := range m.suiteSeq {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p.Suites = append(p.Suites, m.suiteRow(n))
	}
	return p
}

func (m *Model) suiteRow(suite string) SuiteRow {
	row := SuiteRow{Suite: suite, LastAt: m.suiteAt[suite], Outcomes: []Count{}}
	for _, run := range m.suiteRuns[suite] {
		row.Runs++
		if s := m.runs[runKey(suite, run)]; s != nil && s.Runner != "" && s.Status == "" {
			row.Running++
		}
	}
	r, _, ok := m.report(suite)
	if !ok {
		return row
	}
	l := m.suites[suite]
	row.Submitted, row.Split, row.Cases, row.Trials, row.Complete = true, r.Split, len(r.Cases), r.Trials, r.Complete
	row.Reported, row.StoppedEarly, row.Controlled = len(l.Reported) > 0, r.StoppedEarly != nil, string(r.ControlState)
	for _, t := range r.Treatments {
		row.Treatments = append(row.Treatments, t.Treatment)
		row.Planned += t.Planned
		row.Started += t.Started
		row.Ended += t.Ended
		row.Graded += t.Graded
		row.Passed += t.Passed
		row.Failed += t.Failed
		row.Pending += t.Pending
		row.Invalid += t.Invalid
		row.Excluded += t.Excluded
		row.Awaiting += t.Awaiting
		row.Harness += t.HarnessErrors
	}
	row.Outcomes = outcomeCounts(r.Attempts, func(measure.AttemptRow) bool { return true })
	return row
}

// outcomeOrder is the order outcomes are listed in; an outcome the meter
// adds later is listed after them, by name.
var outcomeOrder = []measure.Outcome{measure.OutcomePassed, measure.OutcomeFailed, measure.OutcomePending,
	measure.OutcomeInvalid, measure.OutcomeAbstained, measure.OutcomeExcluded, measure.OutcomeDisputed, measure.OutcomeAwaiting}

// outcomeCounts counts the report's attempt rows by the outcome the meter
// gave them, listing only outcomes that occur.
func outcomeCounts(rows []measure.AttemptRow, keep func(measure.AttemptRow) bool) []Count {
	n := map[measure.Outcome]int{}
	for _, a := range rows {
		if keep(a) {
			n[a.Outcome]++
		}
	}
	out := []Count{}
	for _, o := range outcomeOrder {
		if n[o] > 0 {
			out = append(out, Count{Outcome: string(o), N: n[o]})
		}
		delete(n, o)
	}
	var rest []string
	for o := range n {
		rest = append(rest, string(o))
	}
	slices.Sort(rest)
	for _, o := range rest {
		out = append(out, Count{Outcome: o, N: n[measure.Outcome(o)]})
	}
	return out
}
