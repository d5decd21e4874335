package main

import (
	"fmt"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/models/hosted"
	"github.com/factline/factline/suites"
)

// checkModels builds every hosted model the suite's treatments and judges
// name, from this process's environment, as the embedded runner and
// grader of a local run will (hosted.New): a model they cannot build (no
// key where one is required, a bad FACTLINE_OPENAI_MAX_TOKENS_FIELD or
// price) would end every run under it errored, so it is said at once,
// before anything is submitted, as checkExtensions says a refused
// extension. Building a model calls nothing.
func checkModels(s *suites.Suite) error {
	const why = "nothing was submitted: every run under it would end errored. A model's key and endpoint come from this process's environment (docs/models.md)"
	for _, t := range s.Treatments {
		if !hosted.Is(t.Model.Provider) {
			continue
		}
		if _, err := hosted.New(t.Model); err != nil {
			return fmt.Errorf("treatment %s: %w; %s", t.ID, err, why)
		}
	}
	for _, c := range s.Cases {
		if c.Grading == nil {
			continue
		}
		for _, in := range c.Grading.Instruments {
			if in.Kind != cases.InstrumentJudge || in.Model == nil || !hosted.Is(in.Model.Provider) {
				continue
			}
			if _, err := hosted.New(*in.Model); err != nil {
				return fmt.Errorf("case %s: judge %s: %w; nothing was submitted: the judge would abstain on every run of the case. A model's key and endpoint come from this process's environment (docs/models.md)", c.ID, in.ID, err)
			}
		}
	}
	return nil
}
