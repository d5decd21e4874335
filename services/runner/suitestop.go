package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/services/runner/step"
)

// suitePoll is how often a run held by a paused suite looks at the
// suite's facts again.
const suitePoll = 200 * time.Millisecond

// suiteNow reads what the suite's own facts say now: whether it stopped
// early (suite.stopped) and its operator's controls (suite.controlled).
// It is read at every start and every turn boundary, never cached: a
// control may arrive at any instant (docs/controls.md#suites).
func (s *Service) suiteNow(ctx context.Context, suite string) (stopped bool, c projections.SuiteControl, err error) {
	log, err := s.bus.LoadRun(ctx, suite, events.SuiteScope)
	if err != nil {
		return false, c, fmt.Errorf("load suite %s: %w", suite, err)
	}
	facts := log.Facts()
	for _, f := range facts {
		if _, ok := f.Body.(events.SuiteStopped); ok {
			stopped = true
		}
	}
	return stopped, projections.FoldSuiteControl(suite, facts), nil
}

// beforeStart decides whether a run not yet started starts: a suite that
// stopped early, was drained or cancelled never starts it (the ending is
// returned); a paused one holds it here, the delivery kept, until the
// suite is resumed, drained or cancelled.
func (s *Service) beforeStart(ctx context.Context, suite, run string) (step.Ending, error) {
	held := false
	for {
		stopped, c, err := s.suiteNow(ctx, suite)
		if err != nil {
			return step.Ending{}, err
		}
		if stopped {
			return step.Ending{Status: events.RunCancelled, Reason: events.ReasonSuiteStopped}, nil
		}
		g := c.BeforeStart()
		switch g.Verdict {
		case projections.Stop:
			return step.Ending{Status: events.RunCancelled, Reason: g.Reason}, nil
		case projections.Proceed:
			if held {
				s.log.Info("suite resumed: the run starts", "suite", suite, "run", run)
			}
			return step.Ending{}, nil
		}
		if !held {
			held = true
			s.log.Info("suite paused: the run waits to start", "suite", suite, "run", run)
		}
		if err := sleep(ctx, suitePoll); err != nil {
			return step.Ending{}, err
		}
	}
}

// atBoundary is the suite's say between two turns of a running run: a
// cancelled suite ends it (its acceptance committed as control.accepted
// citing the suite's control), a paused one holds it here until the suite
// is resumed, drained or cancelled. A cancel of the run itself ends the
// hold; the loop then takes it. held reports that the run waited, so the
// loop reads its log again.
func (a *attempt) atBoundary(ctx context.Context) (end step.Ending, held bool, err error) {
	for {
		_, c, err := a.svc.suiteNow(ctx, a.suite)
		if err != nil {
			return step.Ending{}, held, err
		}
		g := c.AtBoundary()
		switch g.Verdict {
		case projections.Stop:
			last := c.Last()
			end, err := a.acceptCancel(ctx, &events.Control{ID: last.ID, Signal: events.SignalCancel, Reason: g.Reason, From: last.From})
			return end, held, err
		case projections.Proceed:
			if held {
				a.svc.log.Info("suite resumed: the run goes on", "suite", a.suite, "run", a.run)
			}
			return step.Ending{}, held, nil
		}
		if !held {
			held = true
			a.svc.log.Info("suite paused: the run holds at its turn boundary", "suite", a.suite, "run", a.run)
			a.status("suite_paused", nil)
		}
		if a.ctl.pendingCancel() != nil {
			return step.Ending{}, held, nil
		}
		t := time.NewTimer(suitePoll)
		select {
		case <-a.ctl.wakeup():
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return step.Ending{}, held, ctx.Err()
		}
		t.Stop()
	}
}
