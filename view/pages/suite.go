package pages

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"github.com/factline/factline/services/meter/measure"
)

// SuitePage is one suite: the meter's report, the case × treatment grid of
// outcomes per trial, the outcome mix per treatment, and every run.
type SuitePage struct {
	Suite     string `json:"suite"`
	Through   uint64 `json:"through"`
	Submitted bool   `json:"submitted"`
	// Report is the meter's report as 'factline report --json' prints it
	// (measure.Build, encoded by measure.EncodeJSON): the page shows these
	// numbers and computes none of its own.
	Report     json.RawMessage `json:"report,omitempty"`
	Reported   int             `json:"reported"`
	Cases      []string        `json:"cases,omitempty"`
	Treatments []string        `json:"treatments,omitempty"`
	Grid       []GridRow       `json:"grid,omitempty"`
	Mix        []Mix           `json:"mix,omitempty"`
	Runs       []RunRow        `json:"runs"`
}

// GridRow is one case of the grid: a cell per treatment.
type GridRow struct {
	Case  string     `json:"case"`
	Cells []GridCell `json:"cells"`
}

// GridCell is one case under one treatment: its trials.
type GridCell struct {
	Treatment string  `json:"treatment"`
	Trials    []Trial `json:"trials"`
	// Passed and Graded count the cell's trials graded passed, and graded
	// passed or failed.
	Passed int `json:"passed"`
	Graded int `json:"graded"`
}

// Trial is one planned attempt as the report classifies it.
type Trial struct {
	Trial   uint32 `json:"trial"`
	Run     string `json:"run"`
	Outcome string `json:"outcome"`
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Mix is one treatment's outcome mix.
type Mix struct {
	Treatment string  `json:"treatment"`
	Counts    []Count `json:"counts"`
}

// RunRow is one run of the suite the log holds (planned or not).
type RunRow struct {
	Run       string    `json:"run"`
	Case      string    `json:"case,omitempty"`
	Treatment string    `json:"treatment,omitempty"`
	Trial     uint32    `json:"trial,omitempty"`
	Runner    string    `json:"runner,omitempty"`
	Turns     uint32    `json:"turns"`
	Status    string    `json:"status,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Outcome   string    `json:"outcome,omitempty"`
	LastKind  string    `json:"last_kind"`
	LastAt    time.Time `json:"last_at"`
}

// HasSuite reports whether the log holds a fact of the suite.
func (m *Model) HasSuite(suite string) bool {
	_, ok := m.suiteSeq[suite]
	return ok
}

// Suite returns a suite's page; false when the log has no fact of it.
func (m *Model) Suite(suite string) (SuitePage, bool) {
	if _, ok := m.suiteSeq[suite]; !ok {
		return SuitePage{}, false
	}
	p := SuitePage{Suite: suite, Through: m.through, Runs: []RunRow{}}
	outcome := map[string]string{}
	if r, js, ok := m.report(suite); ok {
		p.Submitted, p.Report, p.Reported, p.Cases = true, json.RawMessage(js), len(m.suites[suite].Reported), r.Cases
		for _, t := range r.Treatments {
			p.Treatments = append(p.Treatments, t.Treatment)
			p.Mix = append(p.Mix, Mix{Treatment: t.Treatment, Counts: outcomeCounts(r.Attempts, func(a measure.AttemptRow) bool { return a.Treatment == t.Treatment })})
		}
		p.Grid = grid(r)
		for _, a := range r.Attempts {
			outcome[a.Run] = string(a.Outcome)
		}
	}
	for _, run := range m.suiteRuns[suite] {
		row := RunRow{Run: run, Outcome: outcome[run]}
		if s := m.runs[runKey(suite, run)]; s != nil {
			row.Case, row.Treatment, row.Trial, row.Runner, row.Turns = s.Case, s.Treatment, s.Trial, s.Runner, s.Turns
			row.Status, row.Reason, row.LastKind, row.LastAt = string(s.Status), s.Reason, string(s.LastKind), s.LastAt
		}
		p.Runs = append(p.Runs, row)
	}
	return p, true
}

// grid lays the report's attempt rows out by case and treatment, trials in
// order.
func grid(r measure.Report) []GridRow {
	at := map[[2]string]*GridCell{}
	rows := make([]GridRow, len(r.Cases))
	for i, c := range r.Cases {
		rows[i] = GridRow{Case: c, Cells: make([]GridCell, len(r.Treatments))}
		for j, t := range r.Treatments {
			rows[i].Cells[j] = GridCell{Treatment: t.Treatment, Trials: []Trial{}}
			at[[2]string{c, t.Treatment}] = &rows[i].Cells[j]
		}
	}
	for _, a := range r.Attempts {
		cell := at[[2]string{a.Case, a.Treatment}]
		if cell == nil {
			continue
		}
		cell.Trials = append(cell.Trials, Trial{Trial: a.Trial, Run: a.Run, Outcome: string(a.Outcome), Status: string(a.Status), Reason: a.Reason})
		switch a.Outcome {
		case measure.OutcomePassed:
			cell.Passed++
			cell.Graded++
		case measure.OutcomeFailed:
			cell.Graded++
		}
	}
	for i := range rows {
		for _, cell := range rows[i].Cells {
			slices.SortStableFunc(cell.Trials, func(a, b Trial) int { return cmp.Compare(a.Trial, b.Trial) })
		}
	}
	return rows
}
