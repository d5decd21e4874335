// Package pages builds the data of the viewer's pages from facts: the
// suites list, one suite's report, one run's transcript. It is a
// projection like any other (a deterministic fold, no I/O, no NATS): the
// same facts in the same order give the same pages whether they come from
// the live stream or from an export file, which is how the viewer's tests
// check what a live server served. The HTTP shell that renders the pages
// is package view.
package pages

import (
	"encoding/json"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/services/meter/measure"
)

// Model is the state every page is built from. Feed it facts in log order
// with Apply; it is not safe for concurrent use (the shell holds a lock).
type Model struct {
	through uint64
	facts   int
	bad     []Bad

	// The built-in projections the pages are read from.
	history projections.History
	runs    projections.Runs
	grades  projections.Grades
	suites  measure.Suites
	// details holds what a transcript shows beyond the history
	// projection, per suite/run.
	details map[string]*runDetail

	// suiteSeq is the sequence of the newest fact of each suite: a
	// cached report is good while it has not moved.
	suiteSeq map[string]uint64
	suiteAt  map[string]time.Time
	// suiteRuns lists each suite's runs in the order the log first names
	// them.
	suiteRuns map[string][]string
	reports   map[string]cachedReport
}

// Bad is a stored message that holds no fact of its subject (undecodable,
// or forged under another kind's, suite's or run's subject): the pages
// leave it out and say so.
type Bad struct {
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	Reason  string `json:"reason"`
}

type cachedReport struct {
	seq    uint64
	report measure.Report
	json   []byte
}

// New returns the model of an empty log.
func New() *Model {
	return &Model{
		history:   projections.HistoryFold.Init(),
		runs:      projections.RunsFold.Init(),
		grades:    projections.GradesFold.Init(),
		suites:    measure.SuitesFold.Init(),
		details:   map[string]*runDetail{},
		suiteSeq:  map[string]uint64{},
		suiteAt:   map[string]time.Time{},
		suiteRuns: map[string][]string{},
		reports:   map[string]cachedReport{},
	}
}

// Apply folds the fact stored at stream sequence seq. Facts must come in
// stream order; one at or below the last sequence folded is ignored, so a
// feed that resumes after a reconnect may overlap without folding a fact
// twice.
func (m *Model) Apply(seq uint64, f events.Fact) {
	if seq != 0 && seq <= m.through {
		return
	}
	m.through = max(m.through, seq)
	m.facts++
	m.history = projections.HistoryFold.Apply(m.history, f)
	m.runs = projections.RunsFold.Apply(m.runs, f)
	m.grades = projections.GradesFold.Apply(m.grades, f)
	m.suites = measure.SuitesFold.Apply(m.suites, f)
	m.suiteSeq[f.Suite] = m.through
	m.suiteAt[f.Suite] = f.At
	if f.Run != events.SuiteScope {
		key := runKey(f.Suite, f.Run)
		d := m.details[key]
		if d == nil {
			d = newRunDetail()
			m.details[key] = d
			m.suiteRuns[f.Suite] = append(m.suiteRuns[f.Suite], f.Run)
		}
		d.apply(seq, f)
	}
}

// Skip records a stored message that holds no fact of its subject.
func (m *Model) Skip(seq uint64, subject string, err error) {
	if seq != 0 && seq <= m.through {
		return
	}
	m.through = max(m.through, seq)
	m.bad = append(m.bad, Bad{Seq: seq, Subject: subject, Reason: err.Error()})
}

// Through is the stream sequence of the newest message folded (0 for an
// empty log).
func (m *Model) Through() uint64 { return m.through }

// Facts counts the facts folded.
func (m *Model) Facts() int { return m.facts }

// report returns the meter's report of a submitted suite, built by the
// meter's own core (measure.Build) and cached until a fact of the suite
// arrives, with its canonical JSON: the bytes 'factline report --json'
// prints.
func (m *Model) report(suite string) (measure.Report, []byte, bool) {
	l := m.suites[suite]
	if l == nil || l.Submitted == nil {
		return measure.Report{}, nil, false
	}
	seq := m.suiteSeq[suite]
	if c, ok := m.reports[suite]; ok && c.seq == seq {
		return c.report, c.json, true
	}
	r := measure.Build(l)
	js, err := measure.EncodeJSON(r)
	if err != nil {
		// A report of plain numbers and strings always encodes; keep the
		// page up and say what failed rather than show nothing.
		js, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	m.reports[suite] = cachedReport{seq: seq, report: r, json: js}
	return r, js, true
}

func runKey(suite, run string) string { return suite + "/" + run }
