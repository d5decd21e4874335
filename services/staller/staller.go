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
	"log/slog"
	"strconv"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/cases/caseload"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/staller/stall"
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

// Option configures a Service.
type Option func(*config)

type config struct {
	instance string
	log      *slog.Logger
	runs     int
	policies int
	consumer bus.ConsumerConfig
}

// WithInstance names this instance in the facts it writes
// (producer.instance). The default is <hostname>-<pid>.
func WithInstance(name string) Option { return func(c *config) { c.instance = name } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithCacheSize bounds the run cache (runs kept loaded, default 1024) and
// the policy cache (decoded cases under treatments, default 256).
func WithCacheSize(runs, policies int) Option {
	return func(c *config) { c.runs, c.policies = runs, policies }
}

// WithConsumer tunes the durable consumer (workers, prefetch, ack wait, max
// deliveries). Its name and filter are always the staller's.
func WithConsumer(cc bus.ConsumerConfig) Option { return func(c *config) { c.consumer = cc } }

// Service is one staller instance.
type Service struct {
	b        *bus.Bus
	cfg      config
	log      *slog.Logger
	runs     *bus.RunCache
	policies *caseload.Cache
}

// New returns a staller instance on b. Start it with Run.
func New(b *bus.Bus, opts ...Option) *Service {
	c := config{policies: 256}
	for _, o := range opts {
		o(&c)
	}
	if c.instance == "" {
		c.instance = events.LocalInstance("")
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.consumer.Name = ConsumerName
	c.consumer.Filters = []string{events.KindFilter(events.KindTurnCompleted)}
	if c.consumer.MaxDeliver == 0 {
		// Generous: a turn whose predecessor is still being observed by
		// another instance is retried until that one lands.
		c.consumer.MaxDeliver = 10
	}
	return &Service{
		b:        b,
		cfg:      c,
		log:      c.log.With("service", "staller", "instance", c.instance),
		runs:     b.NewRunCache(c.runs),
		policies: caseload.New(c.policies),
	}
}

// Run consumes turn.completed until ctx is done, then returns nil (or the
// consumer's error). Deliveries in progress at shutdown are handed back to
// other instances unfinished.
func (s *Service) Run(ctx context.Context) error {
	s.log.Info("staller started")
	defer s.log.Info("staller stopped")
	if err := s.b.Consume(ctx, s.cfg.consumer, s.Handle); err != nil {
		return fmt.Errorf("staller: %w", err)
	}
	return nil
}

// Handle observes the turn a turn.completed delivery closes and commits its
// stall.observed, once: a redelivery, or two instances handling the same
// delivery, find the committed fact by its message ID and append nothing.
// A run without run.requested, or whose case or treatment blob is missing
// or unreadable, cannot be observed by any retry: the error is permanent
// and the delivery is dead-lettered with the reason.
func (s *Service) Handle(ctx context.Context, d bus.Delivery) error {
	tc, ok := d.Fact.Body.(events.TurnCompleted)
	if !ok {
		return bus.Permanent(fmt.Errorf("staller: delivered %s, want %s", d.Fact.Kind(), events.KindTurnCompleted))
	}
	suite, run, turn := d.Fact.Suite, d.Fact.Run, tc.Evidence.Turn
	log, err := s.runs.LoadThrough(ctx, suite, run, d.Seq)
	if err != nil {
		return fmt.Errorf("staller: load %s/%s: %w", suite, run, err)
	}
	if _, done := observedIn(log, turn); done {
		return nil
	}
	pol, err := s.policy(ctx, log)
	if err != nil {
		return err
	}
	recs, err := s.b.Commit(ctx, s.runs, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
		return s.decide(log, d.Fact, turn, pol)
	})
	if err != nil {
		return fmt.Errorf("staller: turn %d of %s/%s: %w", turn, suite, run, err)
	}
	for _, r := range recs {
		if so, ok := r.Fact.Body.(events.StallObserved); ok && !r.Duplicate {
			action := "none"
			if a := so.Observation.Action; a != nil {
				action = a.Type()
			}
			metrics.StallActions.WithLabelValues(action).Inc()
		}
		if so, ok := r.Fact.Body.(events.StallObserved); ok && !r.Duplicate && so.Observation.Action != nil {
			s.log.Info("stall action", "suite", suite, "run", run, "turn", turn, "action", so.Observation.Action.Type(),
				"armed", so.Observation.Checkpoint.Armed)
		}
	}
	return nil
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
	st := stall.New(pol)
	for _, r := range log.Records[:end+1] {
		if c, ok := r.Fact.Body.(events.TurnCompleted); ok && c.Evidence.Turn != turn && !observed[c.Evidence.Turn] {
			return nil, fmt.Errorf("turn %d: %w", c.Evidence.Turn, ErrEarlierTurnPending)
		}
		st = stall.Fold(st, r.Fact)
	}
	if !st.HasTurn(turn) {
		return nil, bus.Permanent(fmt.Errorf("turn.completed %s did not complete turn %d", tc.ID, turn))
	}
	f, err := events.NewFact(events.Meta{
		Suite: log.Suite, Run: log.Run, TaskGeneration: max(gen, 1),
		Position: log.NextPosition(), Causation: tc.ID.String(),
		Producer: events.Producer{Service: events.OwnerStaller, Instance: s.cfg.instance},
	}, events.StallObserved{Turn: turn, Observation: stall.Observe(st, turn)})
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("stall.observed for turn %d: %w", turn, err))
	}
	return []bus.Pending{{Fact: f, MsgID: MsgID(log.Run, turn)}}, nil
}

// policy returns the stall policy of the run's case under its treatment.
func (s *Service) policy(ctx context.Context, log bus.RunLog) (stall.Policy, error) {
	eff, err := s.policies.Effective(ctx, s.b, log)
	if err != nil {
		return stall.Policy{}, fmt.Errorf("staller: %s/%s: %w", log.Suite, log.Run, err)
	}
	return PolicyFrom(eff), nil
}

// PolicyFrom converts a case under its treatment into the core's policy:
// the resolved stall thresholds, and the requirements done needs (the
// case's requirements, each required check no requirement names, and the
// write requirement when the case needs an applied change).
func PolicyFrom(eff cases.Effective) stall.Policy {
	l := eff.Stall
	p := stall.Policy{
		RepeatedFailure:      l.RepeatedFailure,
		RepeatedObservation:  l.RepeatedObservation,
		RepeatedError:        l.RepeatedError,
		IdleTurns:            l.IdleTurns,
		Alternation:          l.Alternation,
		FailingVerifications: l.FailingVerifications,
		RepairBudget:         l.RepairBudget,
		EscalateTo:           l.EscalateTo,
	}
	c := eff.Case
	if c == nil {
		return p
	}
	p.FixtureDigest = c.FixtureDigest
	named := map[string]bool{}
	ids := map[string]bool{}
	for _, r := range c.Requirements {
		p.Requirements = append(p.Requirements, stall.Requirement{ID: events.RequirementID(r.ID), Check: r.Check})
		named[r.Check], ids[r.ID] = true, true
	}
	for _, ch := range c.Checks {
		if ch.IsRequired() && !named[ch.ID] {
			id := ch.ID
			if ids[id] {
				id += "-check"
			}
			ids[id] = true
			p.Requirements = append(p.Requirements, stall.Requirement{ID: events.RequirementID(id), Check: ch.ID})
		}
	}
	if c.RequiresWriteOrDefault() && !ids[string(stall.WriteRequirement)] {
		p.Requirements = append(p.Requirements, stall.Requirement{ID: stall.WriteRequirement, Write: true})
	}
	return p
}
