package suites

import (
	"fmt"
	"strings"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

// Stopping lets a suite stop early once one comparison is settled: the
// meter tracks an anytime-valid confidence sequence for the paired
// difference (stats.PairedSequence), which may be looked at after every
// pair without inflating its error rate. Once the interval excludes zero,
// or lies within Margin of it when a margin is set, the meter records
// suite.stopped: runs not yet started are not run, runs in flight finish
// and are reported.
type Stopping struct {
	// Comparison is "A vs B": two treatment IDs of the suite. The
	// difference tracked is B − A in pass rate, paired on case and trial.
	Comparison string `yaml:"comparison" json:"comparison"`
	// Confidence is the sequence's level (default 0.95), in (0, 1).
	Confidence float64 `yaml:"confidence,omitempty" json:"confidence"`
	// MinPairs is how many graded pairs the suite waits for before it may
	// stop (default 10), so that no suite stops on a handful of cases.
	MinPairs uint32 `yaml:"min_pairs,omitempty" json:"min_pairs"`
	// Margin, when set, also stops the suite once the interval lies
	// within (−Margin, Margin): the treatments are equivalent to within
	// it. In (0, 1].
	Margin float64 `yaml:"margin,omitempty" json:"margin,omitempty"`
	// Scorer, when set, tracks the difference B − A of this scorer's
	// values (mapped onto [0, 1] by its scale) instead of the pass rate;
	// some case of the suite must declare it (docs/grading.md#scores).
	Scorer string `yaml:"scorer,omitempty" json:"scorer,omitempty"`
}

// Defaults of a stopping block.
const (
	DefaultStoppingConfidence = 0.95
	DefaultStoppingMinPairs   = 10
)

// Treatments returns the comparison's two treatment IDs, A then B.
func (s *Stopping) Treatments() (a, b string) {
	a, b, _ = strings.Cut(s.Comparison, " vs ")
	return strings.TrimSpace(a), strings.TrimSpace(b)
}

func (s *Stopping) normalise(field string) error {
	a, b, ok := strings.Cut(s.Comparison, " vs ")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if !ok || a == "" || b == "" {
		return fieldErr(field+".comparison", "want \"A vs B\" naming two treatments, got %q", s.Comparison)
	}
	for _, id := range []string{a, b} {
		if err := events.ValidateToken("treatment", id); err != nil {
			return tokenErr(field+".comparison", err)
		}
	}
	if a == b {
		return fieldErr(field+".comparison", "compares %s with itself", a)
	}
	s.Comparison = a + " vs " + b
	if s.Confidence == 0 {
		s.Confidence = DefaultStoppingConfidence
	}
	if !(s.Confidence > 0 && s.Confidence < 1) {
		return fieldErr(field+".confidence", "want a level between 0 and 1 (0.95 for 95%%), got %v", s.Confidence)
	}
	if s.MinPairs == 0 {
		s.MinPairs = DefaultStoppingMinPairs
	}
	if s.Scorer != "" {
		if err := events.ValidateToken("scorer", s.Scorer); err != nil {
			return tokenErr(field+".scorer", err)
		}
	}
	if s.Margin < 0 || s.Margin > 1 {
		return fieldErr(field+".margin", "want a difference in pass rate between 0 and 1, got %v", s.Margin)
	}
	return nil
}

// checkTreatments says which named treatment the suite lacks.
func (s *Stopping) checkTreatments(ids map[string]int) error {
	a, b := s.Treatments()
	for _, id := range []string{a, b} {
		if _, ok := ids[id]; !ok {
			return fmt.Errorf("no treatment %q in the suite", id)
		}
	}
	return nil
}

// checkScorer says when no case of the suite declares the scorer the rule
// names.
func (s *Stopping) checkScorer(cs []*cases.Case) error {
	if s.Scorer == "" {
		return nil
	}
	for _, c := range cs {
		if c.Grading == nil {
			continue
		}
		for _, sc := range c.Grading.Scorers {
			if sc.ID == s.Scorer {
				return nil
			}
		}
	}
	return fmt.Errorf("no case of the suite declares the scorer %q", s.Scorer)
}
