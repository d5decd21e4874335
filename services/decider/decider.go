// Package decider is the stop decider's service shell: a durable consumer
// of stall.observed, shared by any number of instances, that loads the run,
// folds its facts with the pure core in package stop and commits exactly one
// stop.decided per completed turn. The shell holds nothing but bounded
// caches; the log is the state.
package decider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/cases/caseload"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/decider/stop"
)

// ConsumerName is the durable consumer every decider instance shares.
const ConsumerName = "decider"

// MsgID is the deduplication ID of the stop.decided for one turn; it equals
// the decision's ID.
func MsgID(run string, turn uint32) string { return stop.DecisionID(run, turn) }

// JudgeRequest is what an optional judge reviews: a done decision and the
// run it ends.
type JudgeRequest struct {
	Suite, Run string              // the run
	Turn       uint32              // the turn decided
	Decision   events.StopDecision // the deterministic done decision under review
}

// Judge is an optional model review of done decisions. It must not be the
// actor's own model (its opinion is then ignored). An error counts as a
// refusal, a deadline as a timeout: either leaves the decision to the
// deterministic checks.
type Judge func(ctx context.Context, req JudgeRequest) (stop.Opinion, error)

// Option configures a Service.
type Option func(*config)

type config struct {
	instance     string
	log          *slog.Logger
	runs         int
	policies     int
	consumer     bus.ConsumerConfig
	judge        Judge
	judgeTimeout time.Duration
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
// deliveries). Its name and filter are always the decider's.
func WithConsumer(cc bus.ConsumerConfig) Option { return func(c *config) { c.consumer = cc } }

// WithJudge adds a judge that reviews done decisions, each within timeout
// (default one minute). See stop.Review for what a judge can and cannot
// change.
func WithJudge(j Judge, timeout time.Duration) Option {
	return func(c *config) { c.judge, c.judgeTimeout = j, timeout }
}

// Service is one decider instance.
type Service struct {
	b        *bus.Bus
	cfg      config
	log      *slog.Logger
	runs     *bus.RunCache
	policies *caseload.Cache
}

// New returns a decider instance on b. Start it with Run.
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
	if c.judgeTimeout <= 0 {
		c.judgeTimeout = time.Minute
	}
	c.consumer.Name = ConsumerName
	c.consumer.Filters = []string{events.KindFilter(events.KindStallObserved)}
	return &Service{
		b:        b,
		cfg:      c,
		log:      c.log.With("service", "decider", "instance", c.instance),
		runs:     b.NewRunCache(c.runs),
		policies: caseload.New(c.policies),
	}
}

// Run consumes stall.observed until ctx is done, then returns nil (or the
// consumer's error). Deliveries in progress at shutdown are handed back to
// other instances unfinished.
func (s *Service) Run(ctx context.Context) error {
	s.log.Info("decider started")
	defer s.log.Info("decider stopped")
	if err := s.b.Consume(ctx, s.cfg.consumer, s.Handle); err != nil {
		return fmt.Errorf("decider: %w", err)
	}
	return nil
}

// Handle decides the turn a stall.observed delivery observed and commits
// its stop.decided, once: a redelivery, or two instances handling the same
// delivery, find the committed decision by its message ID and append
// nothing. A run without run.requested, with an unreadable case or
// treatment, or without the observed turn's turn.completed cannot be
// decided by any retry: the error is permanent and the delivery is
// dead-lettered with the reason.
func (s *Service) Handle(ctx context.Context, d bus.Delivery) error {
	so, ok := d.Fact.Body.(events.StallObserved)
	if !ok {
		return bus.Permanent(fmt.Errorf("decider: delivered %s, want %s", d.Fact.Kind(), events.KindStallObserved))
	}
	suite, run, turn := d.Fact.Suite, d.Fact.Run, so.Turn
	log, err := s.runs.LoadThrough(ctx, suite, run, d.Seq)
	if err != nil {
		return fmt.Errorf("decider: load %s/%s: %w", suite, run, err)
	}
	if decidedIn(log, turn) {
		return nil
	}
	eff, err := s.policies.Effective(ctx, s.b, log)
	if err != nil {
		return fmt.Errorf("decider: %s/%s: %w", suite, run, err)
	}
	pol := PolicyFrom(eff)
	judged := &judgeMemo{}
	recs, err := s.b.Commit(ctx, s.runs, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
		return s.decide(ctx, log, d.Fact, so, pol, judged)
	})
	if err != nil {
		return fmt.Errorf("decider: turn %d of %s/%s: %w", turn, suite, run, err)
	}
	for _, r := range recs {
		if sd, ok := r.Fact.Body.(events.StopDecided); ok && !r.Duplicate {
			result := "continue"
			if fin, ok := sd.Decision.Result.Variant().(events.StopFinish); ok {
				result = string(fin.Status)
			}
			metrics.Decisions.WithLabelValues(result).Inc()
			if fin, ok := sd.Decision.Result.Variant().(events.StopFinish); ok {
				s.log.Info("run finishes", "suite", suite, "run", run, "turn", turn, "status", fin.Status, "reason", fin.Reason)
			}
		}
	}
	return nil
}

func decidedIn(log bus.RunLog, turn uint32) bool {
	if _, ok := log.ByMsgID(MsgID(log.Run, turn)); ok {
		return true
	}
	for _, r := range log.Records {
		if sd, ok := r.Fact.Body.(events.StopDecided); ok && sd.Decision.Turn == turn {
			return true
		}
	}
	return false
}

// judgeMemo keeps one judge opinion per handled delivery, so that Commit
// deciding again after a conflict does not ask the judge again.
type judgeMemo struct {
	once    sync.Once
	opinion stop.Opinion
}

// decide folds the whole run and returns the turn's stop.decided, or nothing
// when it is already committed.
func (s *Service) decide(ctx context.Context, log bus.RunLog, sf events.Fact, so events.StallObserved, pol stop.Policy, judged *judgeMemo) ([]bus.Pending, error) {
	if decidedIn(log, so.Turn) || log.Ended() {
		// Decided already, or the run is over: nobody but a grader
		// appends to an ended run.
		return nil, nil
	}
	st := stop.New()
	for _, r := range log.Records {
		st = stop.Fold(st, r.Fact)
	}
	if !st.HasTurn(so.Turn) {
		return nil, bus.Permanent(fmt.Errorf("stall.observed %s observes turn %d, which has no turn.completed", sf.ID, so.Turn))
	}
	dec := stop.Decide(st, so.Turn, so.Observation, pol)
	if fin, ok := dec.Result.Variant().(events.StopFinish); ok && fin.Status == events.FinishDone && s.cfg.judge != nil {
		judged.once.Do(func() { judged.opinion = s.ask(ctx, log, dec) })
		dec = stop.Review(dec, judged.opinion, pol)
	}
	f, err := events.NewFact(events.Meta{
		Suite: log.Suite, Run: log.Run, TaskGeneration: dec.TaskGeneration,
		Position: log.NextPosition(), Causation: sf.ID.String(),
		Producer: events.Producer{Service: events.OwnerDecider, Instance: s.cfg.instance},
	}, events.StopDecided{Decision: dec})
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("stop.decided for turn %d: %w", so.Turn, err))
	}
	return []bus.Pending{{Fact: f, MsgID: MsgID(log.Run, so.Turn)}}, nil
}

// ask calls the judge within its timeout; failures become a timeout or a
// refusal, which change nothing.
func (s *Service) ask(ctx context.Context, log bus.RunLog, dec events.StopDecision) stop.Opinion {
	jctx, cancel := context.WithTimeout(ctx, s.cfg.judgeTimeout)
	defer cancel()
	o, err := s.cfg.judge(jctx, JudgeRequest{Suite: log.Suite, Run: log.Run, Turn: dec.Turn, Decision: dec})
	switch {
	case err == nil:
		return o
	case errors.Is(err, context.DeadlineExceeded):
		s.log.Warn("judge timed out; the checks decide", "run", log.Run, "turn", dec.Turn)
		return stop.Opinion{Reviewer: o.Reviewer, Verdict: stop.VerdictTimeout}
	default:
		s.log.Warn("judge failed; the checks decide", "run", log.Run, "turn", dec.Turn, "err", err)
		return stop.Opinion{Reviewer: o.Reviewer, Verdict: stop.VerdictRefused, Reason: err.Error()}
	}
}

// PolicyFrom converts a case under its treatment into the core's policy:
// the declared checks in order, the requirements done needs (the case's
// requirements, each required check no requirement names, and the write
// requirement when the case needs an applied change), the fixture digest
// and the actor's model.
func PolicyFrom(eff cases.Effective) stop.Policy {
	var p stop.Policy
	if t := eff.Treatment; t != nil {
		p.ActorModel = t.Model.Provider + "/" + t.Model.Name
	}
	c := eff.Case
	if c == nil {
		return p
	}
	p.FixtureDigest = c.FixtureDigest
	for _, ch := range c.Checks {
		p.Checks = append(p.Checks, stop.Check{ID: ch.ID, Command: ch.Command})
	}
	named := map[string]bool{}
	ids := map[string]bool{}
	for _, r := range c.Requirements {
		p.Requirements = append(p.Requirements, stop.Requirement{ID: events.RequirementID(r.ID), Check: r.Check})
		named[r.Check], ids[r.ID] = true, true
	}
	for _, ch := range c.Checks {
		if ch.IsRequired() && !named[ch.ID] {
			id := ch.ID
			if ids[id] {
				id += "-check"
			}
			ids[id] = true
			p.Requirements = append(p.Requirements, stop.Requirement{ID: events.RequirementID(id), Check: ch.ID})
		}
	}
	if c.RequiresWriteOrDefault() && !ids[string(stop.WriteRequirement)] {
		p.Requirements = append(p.Requirements, stop.Requirement{ID: stop.WriteRequirement, Write: true})
	}
	return p
}
