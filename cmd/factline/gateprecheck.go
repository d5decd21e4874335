package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

// checkGateScorers refuses a gate that names a scorer no case of the suite
// declares: its figure could never be had, so the gate could only fail,
// and only once the whole suite had run. A misspelt scorer is the call's
// mistake, said before anything is submitted (docs/report.md#gates).
func checkGateScorers(s *suites.Suite, gates []measure.Gate) error {
	declared := map[string]bool{}
	for _, c := range s.Cases {
		if c.Grading == nil {
			continue
		}
		for _, sc := range c.Grading.Scorers {
			declared[sc.ID] = true
		}
	}
	for _, g := range gates {
		if g.Scorer == "" || declared[g.Scorer] {
			continue
		}
		has := "it declares no scorer"
		if len(declared) > 0 {
			names := make([]string, 0, len(declared))
			for n := range declared {
				names = append(names, n)
			}
			slices.Sort(names)
			has = "its scorers: " + strings.Join(names, ", ")
		}
		return usageError{fmt.Sprintf("--%s %s: no case of suite %s declares scorer %s (%s), so the gate could never hold",
			g.Kind, g.Given, s.File.Name, g.Scorer, has)}
	}
	return nil
}

// checkBaseline reads --baseline's suite once before the suite is
// submitted, so that a baseline that is missing, cannot be read, holds no
// such suite, or has no treatment to pair with s's stops the job before
// it spends a run on a comparison that cannot be made. What it read is
// let go: the comparison reads the baseline again after the run, and the
// run holds nothing of it meanwhile.
func (o *runOptions) checkBaseline(ctx context.Context, baseline suiteSource, s *suites.Suite) error {
	l, _, err := baseline.load(ctx, &o.t)
	if err != nil {
		return fmt.Errorf("--baseline: %w", err)
	}
	na := make([]string, len(l.Submitted.Treatments))
	for i, t := range l.Submitted.Treatments {
		na[i] = t.ID
	}
	nb := make([]string, len(s.Treatments))
	for i, t := range s.Treatments {
		nb[i] = t.ID
	}
	if _, err := measure.PairTreatments(baseline.given, na, s.File.Name+" (this run)", nb, o.pairs); err != nil {
		return usageError{"--baseline: " + err.Error()}
	}
	return nil
}
