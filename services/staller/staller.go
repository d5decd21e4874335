// Package staller is the stall handler's service shell: a durable consumer
// of turn.completed, shared by any number of instances, that loads the run,
// folds its facts with the pure core in package stall and commits exactly
// one stall.observed per completed turn. The shell holds nothing but bounded
// caches; the log is the state.
package staller

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/staller/stall"
	"github.com/factline/factline/services/staller/stallpolicy"
)

// ConsumerName is the durable consumer every staller instance shares.
const ConsumerName = "staller"

// ErrEarlierTurnPending means an earlier completed turn of the run has no
// stall.observed yet. Observations depend on those before them, so the
// delivery is retried; in the normal flow it cannot happen, because the
// runner starts a turn only after the previous one was decided.
var ErrEarlierTurnPending = errors.New("an earlier turn of the run has not been observed yet")

// MsgID is the deduplication ID of the stall.observed for one turn.
func MsgID(run string, turn uint32) string {
	return events.MessageID(run, events.KindStallObserved, strconv.FormatUint(uint64(turn), 10))
}

// DefaultWorkers is how many runs' turns one staller instance observes at
// once unless kit.WithWorkers says otherwise: a per-turn service's
// (kit.TurnWorkers).
const DefaultWorkers = kit.TurnWorkers

// spec is the staller to the kit: a per-turn service (kit.TurnSpec) whose
// delivery is tried ten times rather than the bus's five: a turn whose
// predecessor is still being observed by another instance is retried until
// that one lands.
var spec = kit.TurnSpec(events.OwnerStaller, ConsumerName, events.KindTurnCompleted, 10)

// Service is one staller instance.
type Service struct {
	sh *kit.Shell
	// folds keeps each run's stall fold as of its last observed turn, so
	// that the next turn folds only the facts since (a run's facts and
	// policy, from its case and treatment, never change).
	folds *kit.Folds[stall.State]
}

// New returns a staller instance on b, configured by the kit's shared
// options (it keeps a run cache and a policy cache, no suite cache). Start
// it with Run.
func New(b *bus.Bus, opts ...kit.Option) (*Service, error) {
	sh, err := kit.New[struct{}](b, spec, nil, opts...)
	if err != nil {
		return nil, err
	}
	return &Service{sh: sh, folds: kit.NewFolds[stall.State](sh.RunCacheSize())}, nil
}

// Run consumes turn.completed until ctx is done, then returns nil (or the
// consumer's error). Deliveries in progress at shutdown are handed back to
// other instances unfinished.
func (s *Service) Run(ctx context.Context) error {
	// Every action is counted from 0: an alert or panel over the first
	// stop would otherwise see no data rather than an increase.
	metrics.StallActions.WithLabelValues("none").Add(0)
	for _, a := range events.StallActionTypes() {
		metrics.StallActions.WithLabelValues(a).Add(0)
	}
	return s.sh.Run(ctx, s.Handle)
}

// Handle observes the turn a turn.completed delivery closes and commits its
// stall.observed, once: a redelivery, or two instances handling the same
// delivery, find the committed fact by its message ID and append nothing.
// A run without run.requested, or whose case or treatment blob is missing
// or unreadable, cannot be observed by any retry: the error is permanent
// and the delivery is dead-lettered with the reason.
func (s *Service) Handle(ctx context.Context, d bus.Delivery) error {
	tc, err := kit.Delivered[events.TurnCompleted](s.sh, d)
	if err != nil {
		return err
	}
	turn := tc.Evidence.Turn
	return s.sh.Decide(ctx, d, kit.Step{
		What: fmt.Sprintf("turn %d", turn),
		Done: func(log bus.RunLog) bool { _, done := observedIn(log, turn); return done },
		Decide: func(log bus.RunLog, eff cases.Effective) ([]bus.Pending, error) {
			return s.decide(log, d.Fact, turn, PolicyFrom(eff))
		},
		Committed: func(r bus.Record) {
			so, ok := r.Fact.Body.(events.StallObserved)
			if !ok {
				return
			}
			action := "none"
			if a := so.Observation.Action; a != nil {
				action = a.Type()
			}
			metrics.StallActions.WithLabelValues(action).Inc()
			if so.Observation.Action != nil {
				s.sh.Log.Info("stall action", "suite", d.Fact.Suite, "run", d.Fact.Run, "turn", turn, "action", action,
					"armed", so.Observation.Checkpoint.Armed)
			}
		},
	})
}

// observedIn reports whether the log already holds the turn's observation.
func observedIn(log bus.RunLog, turn uint32) (bus.Record, bool) {
	if r, ok := log.ByMsgID(MsgID(log.Run, turn)); ok {
		return r, true
	}
	for _, r := range log.Records {
		if so, ok := r.Fact.Body.(events.StallObserved); ok && so.Turn == turn {
			return r, true
		}
	}
	return bus.Record{}, false
}

// decide folds the run up to the delivered turn.completed and returns its
// stall.observed, or nothing when it is already committed.
func (s *Service) decide(log bus.RunLog, tc events.Fact, turn uint32, pol stall.Policy) ([]bus.Pending, error) {
	if _, done := observedIn(log, turn); done {
		return nil, nil
	}
	if log.Ended() {
		// The run is over (its runner was given up, or ended it around an
		// interrupted turn): nobody but a grader appends to it now.
		return nil, nil
	}
	end := -1
	var gen uint32
	observed := map[uint32]bool{}
	for i, r := range log.Records {
		gen = max(gen, r.Fact.TaskGeneration)
		if r.Fact.ID == tc.ID {
			end = i
		}
		if so, ok := r.Fact.Body.(events.StallObserved); ok {
			observed[so.Turn] = true
		}
	}
	if end < 0 {
		return nil, fmt.Errorf("turn.completed %s is not in the loaded run", tc.ID)
	}
	for _, r := range log.Records[:end+1] {
		if c, ok := r.Fact.Body.(events.TurnCompleted); ok && c.Evidence.Turn != turn && !observed[c.Evidence.Turn] {
			return nil, fmt.Errorf("turn %d: %w", c.Evidence.Turn, ErrEarlierTurnPending)
		}
	}
	st := s.folds.FoldOn(log.Suite, log.Run, log.Records, end+1, func() stall.State { return stall.New(pol) }, stall.Fold)
	if !st.HasTurn(turn) {
		return nil, bus.Permanent(fmt.Errorf("turn.completed %s did not complete turn %d", tc.ID, turn))
	}
	obs := stall.Observe(st, turn)
	// Kept once read: the next turn's handler folds on from it.
	s.folds.Put(log.Suite, log.Run, st, log.Records, end+1)
	f, err := s.sh.Fact(events.Meta{
		Suite: log.Suite, Run: log.Run, TaskGeneration: max(gen, 1),
		Position: log.NextPosition(), Causation: tc.ID.String(),
	}, events.StallObserved{Turn: turn, Observation: obs})
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("stall.observed for turn %d: %w", turn, err))
	}
	return []bus.Pending{{Fact: f, MsgID: MsgID(log.Run, turn)}}, nil
}

// PolicyFrom converts a case under its treatment into the core's policy
// (see stallpolicy.From).
func PolicyFrom(eff cases.Effective) stall.Policy { return stallpolicy.From(eff) }
