package pages

import (
	"errors"
	"fmt"
	"slices"

	"github.com/factline/factline/services/meter/measure"
)

// ComparePage compares suite B with suite A of the log, as 'factline
// compare A B' does (measure.CompareSuites): the page shows its numbers
// and computes none of its own.
type ComparePage struct {
	Through uint64 `json:"through"`
	// Suites are the submitted suites of the log, to choose A and B from.
	Suites            []string `json:"suites"`
	A                 string   `json:"a"`
	B                 string   `json:"b"`
	AllowChangedCases bool     `json:"allow_changed_cases"`
	// Comparison is nil until A and B are chosen.
	Comparison *measure.SuiteComparison `json:"comparison,omitempty"`
}

// ErrNotSubmitted is a suite the log holds no suite.submitted of: it has
// no roster to compare.
var ErrNotSubmitted = errors.New("no suite.submitted of it in the log")

// Compare returns the compare page of suites a and b (either may be
// empty: the page then only offers the choice). An error names the suite
// that cannot be compared, or the treatments that do not pair
// (measure.ErrNoPairing).
func (m *Model) Compare(a, b string, allowChanged bool) (ComparePage, error) {
	p := ComparePage{Through: m.through, A: a, B: b, AllowChangedCases: allowChanged, Suites: []string{}}
	for n, l := range m.suites {
		if l.Submitted != nil {
			p.Suites = append(p.Suites, n)
		}
	}
	slices.Sort(p.Suites)
	if a == "" || b == "" {
		return p, nil
	}
	for _, s := range []string{a, b} {
		if l := m.suites[s]; l == nil || l.Submitted == nil {
			return p, fmt.Errorf("suite %q: %w", s, ErrNotSubmitted)
		}
	}
	c, err := measure.CompareSuites(measure.Side{Source: a, Log: m.suites[a]}, measure.Side{Source: b, Log: m.suites[b]},
		measure.CrossOptions{AllowChangedCases: allowChanged})
	if err != nil {
		return p, err
	}
	p.Comparison = &c
	return p, nil
}
