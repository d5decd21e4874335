package meter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

// stoppingOf reads the suite's early-stopping rule from its spec blob,
// once per cached suite state. A suite without one gives nil.
func (s *Service) stoppingOf(ctx context.Context, st *suiteState) (*measure.Stopping, error) {
	if st.stoppingRead {
		return st.stopping, nil
	}
	data, err := s.blob(ctx, "suite spec", st.count.Submitted().SpecDigest)
	if err != nil {
		return nil, err
	}
	var spec suites.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, bus.Permanent(fmt.Errorf("meter: suite spec %s: %w", st.count.Submitted().SpecDigest, err))
	}
	st.stoppingRead = true
	if sp := spec.Stopping; sp != nil {
		a, b := sp.Treatments()
		st.stopping = &measure.Stopping{A: a, B: b, Confidence: sp.Confidence, MinPairs: int(sp.MinPairs), Margin: sp.Margin,
			Scorer: sp.Scorer}
	}
	return st.stopping, nil
}

// stopEarly appends suite.stopped once the suite's stopping rule settles
// its comparison. Runners then leave the runs not yet started unrun.
func (s *Service) stopEarly(ctx context.Context, suite string, st *suiteState) error {
	rule, err := s.stoppingOf(ctx, st)
	if err != nil || rule == nil {
		return err
	}
	// The decision changes only when a grade does (it costs a pass over
	// the planned attempts).
	changes := st.count.GradeChanges()
	if changes == st.stopSeen {
		return nil
	}
	body, stop := st.count.StopDecision(*rule)
	if !stop {
		st.stopSeen = changes
		return nil
	}
	recs, err := s.sh.Bus.Commit(ctx, nil, suite, events.SuiteScope, func(log bus.RunLog) ([]bus.Pending, error) {
		for _, rec := range log.Records {
			if _, ok := rec.Fact.Body.(events.SuiteStopped); ok {
				return nil, nil
			}
		}
		f, err := s.sh.Fact(events.Meta{Suite: suite, Run: events.SuiteScope, Position: log.NextPosition()}, body)
		return []bus.Pending{{Fact: f, MsgID: events.MessageID(events.SuiteScope, events.KindSuiteStopped)}}, err
	})
	if err != nil {
		return fmt.Errorf("meter: stop %s early: %w", suite, err)
	}
	st.stopSeen = changes
	if len(recs) > 0 && !recs[0].Duplicate {
		if err := st.count.Apply(recs[0].Fact, nil); err != nil {
			return err
		}
		s.sh.Log.Info("suite stopped early", "suite", suite, "comparison", body.Comparison, "reason", body.Reason,
			"pairs", body.Pairs, "low", body.Low, "high", body.High)
	}
	return nil
}
