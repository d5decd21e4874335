package meter

import (
	"context"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/services/meter/measure"
)

// Retry requests a new run for each planned attempt of suite whose newest
// run ended as a harness error (only those naming a run of only, when it
// is not empty). Each new run.requested names the run it retries
// (retry_of) and keeps its case, treatment, trial, budget and identity;
// the report then counts the newest run and lists the earlier ones.
// Retrying again requests nothing twice.
func (s *Service) Retry(ctx context.Context, suite string, only []string) ([]measure.Retry, error) {
	if err := events.ValidateToken("suite", suite); err != nil {
		return nil, err
	}
	l := measure.NewLog(suite)
	if _, err := readSuite(ctx, s.sh.Bus, l, 0, 0, func(bus.BadRecord) {}); err != nil {
		return nil, err
	}
	if l.Submitted == nil {
		// The caller says what it was doing (factline retry: …).
		return nil, &NotSubmittedError{Suite: suite}
	}
	if id, ok := measure.UnknownRun(l, only); ok {
		// A typo, or another suite's run: not an attempt with nothing
		// to retry, which would say so and succeed.
		return nil, fmt.Errorf("--run %s: suite %s has no run %q", id, suite, id)
	}
	retries := measure.Retries(l, only)
	for _, r := range retries {
		body := r.Request
		_, err := s.sh.Bus.Commit(ctx, nil, suite, r.Run, func(log bus.RunLog) ([]bus.Pending, error) {
			if _, ok := log.Requested(); ok {
				return nil, nil
			}
			f, err := s.sh.Fact(events.Meta{Suite: suite, Run: r.Run, TaskGeneration: 1, Position: log.NextPosition()}, body)
			return []bus.Pending{{Fact: f, MsgID: measure.RequestMsgID(r.Run)}}, err
		})
		if err != nil {
			return nil, fmt.Errorf("retry %s/%s as %s: %w", suite, r.Of, r.Run, err)
		}
		s.sh.Log.Info("retry requested", "suite", suite, "of", r.Of, "run", r.Run)
	}
	return retries, nil
}

// AwaitRetries waits until every retry's run has ended and its sealed
// candidate, if it sealed one (an errored run may), has a verdict: what
// a caller that runs the retries itself waits for before it reports.
func AwaitRetries(ctx context.Context, b *bus.Bus, suite string, retries []measure.Retry) error {
	left := make([]string, 0, len(retries))
	for _, r := range retries {
		left = append(left, r.Run)
	}
	for len(left) > 0 {
		log, err := b.LoadRun(ctx, suite, left[0])
		if err != nil && !bus.Transient(err) {
			return err
		}
		if err == nil && settled(log.Facts()) {
			left = left[1:]
			continue
		}
		if sleep.For(ctx, 100*time.Millisecond) != nil {
			return fmt.Errorf("%d still running: %w", len(left), context.Cause(ctx))
		}
	}
	return nil
}

// settled says a run has ended and, if it sealed a candidate, that the
// candidate has a verdict.
func settled(facts []events.Fact) bool {
	ended, sealed, graded := false, false, false
	for _, f := range facts {
		switch f.Body.(type) {
		case events.RunEnded:
			ended = true
		case events.CandidateSealed:
			sealed = true
		case events.GradeVerdict:
			graded = true
		}
	}
	return ended && (graded || !sealed)
}
