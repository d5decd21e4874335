package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/cases/caseload"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/mapdiff"
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

// RedefinedError is an instrument of a regrade file with the ID and the
// version a run's case grades it under, but another definition. The
// grader keys results by ID and version, so that version's committed
// result would be reused and the new definition never run: the regrade
// asked for would read "unchanged". A new version grades it again.
type RedefinedError struct {
	Run, Case, Instrument, Version string
	// Fields are the definition's fields that differ, by their YAML keys.
	Fields []string
	// Used are the instrument's versions the run's log has results of:
	// the example of a new version is none of them.
	Used []string
}

func (e *RedefinedError) Error() string {
	example := ""
	if n, err := strconv.Atoi(e.Version); err == nil && n >= 0 {
		for m := n + 1; m > n && m < math.MaxInt; m++ {
			if v := strconv.Itoa(m); !slices.Contains(e.Used, v) {
				example = fmt.Sprintf(", e.g. version: \"%s\"", v)
				break
			}
		}
	}
	return fmt.Sprintf("instrument %s: version %q is the version case %s (run %s) grades it under, with another definition (%s differs): "+
		"its result at that version would be reused and the new definition never run; give it a new version%s to grade it again",
		e.Instrument, e.Version, e.Case, e.Run, strings.Join(e.Fields, ", "), example)
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
	// Every run's plan is made, and checked, before any is regraded: a
	// file refused at the tenth run must not have regraded nine.
	type planned struct {
		run, caseID string
		before      events.GraderVerdict
		grading     *cases.Grading
		touched     bool
	}
	plans := make([]planned, 0, len(runs))
	policies := caseload.New(0)
	for _, run := range runs {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return 0, err
		}
		req, _ := log.Requested()
		eff, err := policies.ForRequest(ctx, b, req)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", run, err)
		}
		if err := redefined(eff.Case.Grading, opts.With, opts.Instruments); err != nil {
			err.Run, err.Case, err.Used = run, req.Case, versionsGraded(log.Facts(), err.Instrument)
			return 0, err
		}
		grading, touched := merged(eff.Case.Grading, opts.With, opts.Instruments)
		plans = append(plans, planned{run: run, caseID: req.Case, before: latestVerdict(log.Facts()), grading: grading, touched: touched})
	}
	for _, p := range plans {
		run, before, grading := p.run, p.before, p.grading
		if !p.touched {
			done(Regraded{Run: run, Case: p.caseID, Skipped: true, Before: before, After: before})
			continue
		}
		if err := g.Regrade(ctx, suite, run, grading); err != nil {
			return 0, fmt.Errorf("regrade %s: %w", run, err)
		}
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return 0, err
		}
		facts := log.Facts()
		done(Regraded{Run: run, Case: p.caseID, Before: before, After: latestVerdict(facts), Facts: facts})
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

// redefined finds an instrument of with (or of only, when given) that has
// the ID and version of one of own's but another definition, and names
// the fields that differ; nil when there is none. Definitions are compared
// as their JSON, so that a value decoded from YAML and one from the stored
// case (4 and 4.0) compare as the same.
func redefined(own *cases.Grading, with cases.Grading, only []string) *RedefinedError {
	if own == nil {
		return nil
	}
	for _, in := range with.Instruments {
		if len(only) > 0 && !slices.Contains(only, in.ID) {
			continue
		}
		i := slices.IndexFunc(own.Instruments, func(x cases.Instrument) bool { return x.ID == in.ID })
		if i < 0 || own.Instruments[i].Version != in.Version {
			continue
		}
		if fields := differing(own.Instruments[i], in); len(fields) > 0 {
			return &RedefinedError{Instrument: in.ID, Version: in.Version, Fields: fields}
		}
	}
	return nil
}

// versionsGraded are the versions of instrument id that facts hold results of.
func versionsGraded(facts []events.Fact, id string) []string {
	var out []string
	for _, f := range facts {
		if g, ok := f.Body.(events.GradeInstrument); ok && string(g.Result.Instrument) == id && !slices.Contains(out, g.Result.Version) {
			out = append(out, g.Result.Version)
		}
	}
	return out
}

// differing names the fields of two instruments that differ, sorted.
func differing(a, b cases.Instrument) []string {
	return mapdiff.Keys(fieldsOf(a), fieldsOf(b))
}

// fieldsOf is an instrument's fields as JSON, by key, each re-encoded so
// that equal values have equal bytes. An instrument that cannot be encoded
// has no fields: none are then reported as differing.
func fieldsOf(in cases.Instrument) map[string]string {
	data, err := json.Marshal(in)
	if err != nil {
		return nil
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		enc, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		out[k] = string(enc)
	}
	return out
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
