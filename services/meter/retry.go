package meter

import (
	"context"
	"fmt"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
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
		return nil, fmt.Errorf("retry: %w", err)
	}
	l := measure.NewLog(suite)
	if _, err := readSuite(ctx, s.sh.Bus, l, 0, 0, func(bus.BadRecord) {}); err != nil {
		return nil, err
	}
	if l.Submitted == nil {
		return nil, fmt.Errorf("retry: no suite %q in the log", suite)
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
