package fleet

import (
	"context"
	"fmt"
	"slices"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/cases/caseload"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
)

// RegradeOptions say what Regrade grades again, and how.
type RegradeOptions struct {
	// With holds the instruments that replace each case's of the same id.
	With cases.Grading
	// Runs, when set, limits the regrade to these runs of the suite.
	Runs []string
	// Instruments, when set, limits With to the instruments of these ids.
	Instruments []string
	// Grader configures the one-off grader that appends the revisions.
	Grader []kit.Option
}

// Regraded is what Regrade did with one run.
type Regraded struct {
	Run string
	// Case is the run's case; Skipped says it has none of the instruments
	// regraded, and the run was left as it was.
	Case    string
	Skipped bool
	// Before and After are the run's newest verdict before and after.
	Before, After events.GraderVerdict
	// Facts are the run's facts after the regrade (nil when skipped).
	Facts []events.Fact
}

// Changed says the regrade appended a new revision.
func (r Regraded) Changed() bool { return r.After.Revision != r.Before.Revision }

// UnknownRunError is a run asked for that is no ended run of the suite.
type UnknownRunError struct{ Suite, Run string }

func (e *UnknownRunError) Error() string {
	return fmt.Sprintf("run %s: no ended run of suite %s has that id", e.Run, e.Suite)
}

// Regrade grades the ended runs of suite again under the instruments of
// opts.With, through a one-off grader (docs/grading.md#regrading), and
// says what it did with each run, as it goes, to done. It returns how
// many runs it chose (every ended run, or those of opts.Runs).
func Regrade(ctx context.Context, b *bus.Bus, suite string, opts RegradeOptions, done func(Regraded)) (int, error) {
	r, err := meter.Report(ctx, b, suite)
	if err != nil {
		return 0, err
	}
	if len(r.Attempts) == 0 {
		return 0, fmt.Errorf("suite %q has no runs in this log", suite)
	}
	var runs []string
	for _, a := range r.Attempts {
		if a.Status != "" && (len(opts.Runs) == 0 || slices.Contains(opts.Runs, a.Run)) {
			runs = append(runs, a.Run)
		}
	}
	for _, want := range opts.Runs {
		if !slices.Contains(runs, want) {
			return 0, &UnknownRunError{Suite: suite, Run: want}
		}
	}
	g, err := OneGrader(b, opts.Grader...)
	if err != nil {
		return 0, err
	}
	policies := caseload.New(0)
	for _, run := range runs {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return 0, err
		}
		before := latestVerdict(log.Facts())
		req, _ := log.Requested()
		eff, err := policies.ForRequest(ctx, b, req)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", run, err)
		}
		grading, touched := merged(eff.Case.Grading, opts.With, opts.Instruments)
		if !touched {
			done(Regraded{Run: run, Case: req.Case, Skipped: true, Before: before, After: before})
			continue
		}
		if err := g.Regrade(ctx, suite, run, grading); err != nil {
			return 0, fmt.Errorf("regrade %s: %w", run, err)
		}
		log, err = b.LoadRun(ctx, suite, run)
		if err != nil {
			return 0, err
		}
		facts := log.Facts()
		done(Regraded{Run: run, Case: req.Case, Before: before, After: latestVerdict(facts), Facts: facts})
	}
	return len(runs), nil
}

// merged is the case's grading with each instrument of with (or only those
// named) replacing the case's of the same id, and each scorer of with (or
// only those reading the named instruments) the case's of the same id. touched says whether any did: an instrument or a
// scorer the case never had is not added to it.
func merged(own *cases.Grading, with cases.Grading, only []string) (*cases.Grading, bool) {
	if own == nil {
		return nil, false
	}
	out := *own
	out.Instruments = slices.Clone(own.Instruments)
	touched := false
	for _, in := range with.Instruments {
		if len(only) > 0 && !slices.Contains(only, in.ID) {
			continue
		}
		if i := slices.IndexFunc(out.Instruments, func(x cases.Instrument) bool { return x.ID == in.ID }); i >= 0 {
			out.Instruments[i], touched = in, true
		}
	}
	// Scorers likewise, by ID: a rescoring on a new scale is a regrade.
	// With instruments named, only the scorers reading them: the rest of
	// the file is not what the operator asked to apply.
	out.Scorers = slices.Clone(own.Scorers)
	for _, sc := range with.Scorers {
		if len(only) > 0 && !slices.Contains(only, sc.Instrument) {
			continue
		}
		if i := slices.IndexFunc(out.Scorers, func(x cases.Scorer) bool { return x.ID == sc.ID }); i >= 0 {
			out.Scorers[i], touched = sc, true
		}
	}
	return &out, touched
}

// latestVerdict is the newest grade revision among facts.
func latestVerdict(facts []events.Fact) events.GraderVerdict {
	var v events.GraderVerdict
	for _, f := range facts {
		if g, ok := f.Body.(events.GradeVerdict); ok && g.Verdict.Revision >= v.Revision {
			v = g.Verdict
		}
	}
	return v
}
