package main

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
)

// owedGradeGrace is how long a local run waits, after its report, without
// a new verdict before it stops its services with grades still owed. The
// grader gives a judge's model call its own budget; this bounds only the
// quiet between verdicts.
const owedGradeGrace = 2 * time.Minute

func gradeFilters(suite string) []string {
	f := func(k events.Kind) string { return events.FactPrefix + "." + suite + ".*." + string(k) }
	return []string{f(events.KindCandidateSealed), f(events.KindGradeVerdict)}
}

// owedApply folds one sealed candidate or verdict into the set of runs
// owed a grade. Only the owed are kept: the set stays as small as the
// grader's backlog, whatever the suite's size.
func owedApply(owed map[string]bool, r bus.Raw) {
	_, run, kind, err := events.ParseFactSubject(r.Subject)
	if err != nil {
		return
	}
	switch kind {
	case events.KindCandidateSealed:
		owed[run] = true
	case events.KindGradeVerdict:
		delete(owed, run)
	}
}

// awaitOwedGrades keeps a local run's services up after its report until
// every sealed candidate of the suite has a verdict. The report does not
// wait for the candidates of runs it excludes (cancelled where that is not
// a valid outcome), but the grader owes them a grade; stopping first would
// leave the store failing its audit until services next run on it. It
// gives up, saying so, after owedGradeGrace without a new verdict.
//
// The grades owed at the report are the ones p saw owed as it followed
// the suite to it; only what follows is read. Reading the suite's every
// sealed candidate and verdict again from the stream's start made the
// server load the subject state of each block of the stream (~1-2 KB a
// run, kept two minutes) when the process peaked
// (docs/benchmarks.md#suite-size).
func awaitOwedGrades(ctx context.Context, b *bus.Bus, suite string, p *progress, store string) error {
	owed, last := p.owedAtReport()
	if len(owed) == 0 {
		return nil
	}
	p.note("waiting for the grader: %d sealed candidate(s) of runs the report excludes have no verdict yet", len(owed))
	for {
		wait, cancel := context.WithTimeoutCause(ctx, owedGradeGrace, errNoNewVerdict)
		before := len(owed)
		_, err := b.Read(wait, bus.ReadOptions{Filters: gradeFilters(suite), Follow: true, FromSeq: last + 1}, func(r bus.Raw) error {
			last = r.Seq
			owedApply(owed, r)
			if len(owed) == 0 {
				cancel()
			}
			return nil
		})
		cause := context.Cause(wait)
		cancel()
		switch {
		case len(owed) == 0:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(cause, errNoNewVerdict) && len(owed) == before:
			runs := make([]string, 0, len(owed))
			for run := range owed {
				runs = append(runs, run)
			}
			slices.Sort(runs)
			p.note("stopping with %d candidate(s) still ungraded (first: %s); the grader grades them the next time "+
				"services run on this store: factline serve --store %s", len(owed), runs[0], shellWord(store))
			return nil
		case err != nil && !errors.Is(cause, errNoNewVerdict):
			// The read failed under us (a restart): read on from the last fact.
			if err := sleep.For(ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
	}
}

// errNoNewVerdict ends one wait for a verdict.
var errNoNewVerdict = errors.New("no new verdict")
