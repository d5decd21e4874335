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
	"sync"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/decider/stop"
	"github.com/factline/factline/services/kit"
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

// config is the decider's own settings, besides the kit's.
type config struct {
	judge        Judge
	judgeTimeout time.Duration
}

// DefaultWorkers is how many runs' turns one decider instance decides at
// once unless kit.WithWorkers says otherwise: a per-turn service's
// (kit.TurnWorkers).
const DefaultWorkers = kit.TurnWorkers

// spec is the decider to the kit: a per-turn service (kit.TurnSpec) whose
// delivery is tried the bus's default number of times.
var spec = kit.TurnSpec(events.OwnerDecider, ConsumerName, events.KindStallObserved, 0)

// WithJudge adds a judge that reviews done decisions, each within timeout
// (0: one minute). See stop.Review for what a judge can and cannot change.
// A nil judge or a negative timeout is refused.
func WithJudge(j Judge, timeout time.Duration) kit.Option {
	return kit.Own("WithJudge", func(c *config) error {
		switch {
		case j == nil:
			return errors.New("the judge is nil")
		case timeout < 0:
			return fmt.Errorf("the timeout %s is negative", timeout)
		case timeout == 0:
			timeout = time.Minute
		}
		c.judge, c.judgeTimeout = j, timeout
		return nil
	})
}

// Service is one decider instance.
type Service struct {
	sh  *kit.Shell
	cfg config
	// folds keeps each run's fold of its log, so that a decision folds
	// only the facts since the run's last one (a run's facts never change).
	folds *kit.Folds[stop.State]
}

// New returns a decider instance on b, configured by the kit's shared
// options (it keeps a run cache and a policy cache, no suite cache) and
// WithJudge. Start it with Run.
func New(b *bus.Bus, opts ...kit.Option) (*Service, error) {
	var c config
	sh, err := kit.New(b, spec, &c, opts...)
	if err != nil {
		return nil, err
	}
	return &Service{sh: sh, cfg: c, folds: kit.NewFolds[stop.State](sh.RunCacheSize())}, nil
}

// Run consumes stall.observed until ctx is done, then returns nil (or the
// consumer's error). Deliveries in progress at shutdown are handed back to
// other instances unfinished.
func (s *Service) Run(ctx context.Context) error {
	// Every result is counted from 0: an alert or panel over the first
	// blocked run would otherwise see no data rather than an increase.
	metrics.Decisions.WithLabelValues("continue").Add(0)
	for _, st := range events.FinishStatuses() {
		metrics.Decisions.WithLabelValues(string(st)).Add(0)
	}
	return s.sh.Run(ctx, s.Handle)
}

// Handle decides the turn a stall.observed delivery observed and commits
// its stop.decided, once: a redelivery, or two instances handling the same
// delivery, find the committed decision by its message ID and append
// nothing. A run without run.requested, with an unreadable case or
// treatment, or without the observed turn's turn.completed cannot be
// decided by any retry: the error is permanent and the delivery is
// dead-lettered with the reason.
func (s *Service) Handle(ctx context.Context, d bus.Delivery) error {
	so, err := kit.Delivered[events.StallObserved](s.sh, d)
	if err != nil {
		return err
	}
	judged := &judgeMemo{}
	return s.sh.Decide(ctx, d, kit.Step{
		What: fmt.Sprintf("turn %d", so.Turn),
		Done: func(log bus.RunLog) bool { return decidedIn(log, so.Turn) },
		Decide: func(log bus.RunLog, eff cases.Effective) ([]bus.Pending, error) {
			return s.decide(ctx, log, d.Fact, so, PolicyFrom(eff), judged)
		},
		Committed: func(r bus.Record) {
			sd, ok := r.Fact.Body.(events.StopDecided)
			if !ok {
				return
			}
			result := "continue"
			fin, finished := sd.Decision.Result.Variant().(events.StopFinish)
			if finished {
				result = string(fin.Status)
			}
			metrics.Decisions.WithLabelValues(result).Inc()
			if finished {
				// The run's last decision: its log is not read again
				// here (a redelivery loads it anew), and kept it would
				// only wait for eviction, holding a run ended.
				s.sh.Runs.Forget(d.Fact.Suite, d.Fact.Run)
				s.sh.Log.Info("run finishes", "suite", d.Fact.Suite, "run", d.Fact.Run, "turn", so.Turn, "status", fin.Status, "reason", fin.Reason)
			}
		},
	})
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

// judgeMemo keeps one judge opinion per handled delivery, and the call that
// gave it, so that Commit deciding again after a conflict does not ask the
// judge again.
type judgeMemo struct {
	once    sync.Once
	opinion stop.Opinion
	call    *events.JudgeCall
}

// decide folds the run (on from its fold of the last decision) and returns
// the turn's stop.decided, or nothing when it is already committed.
func (s *Service) decide(ctx context.Context, log bus.RunLog, sf events.Fact, so events.StallObserved, pol stop.Policy, judged *judgeMemo) ([]bus.Pending, error) {
	if decidedIn(log, so.Turn) || log.Ended() {
		// Decided already, or the run is over: nobody but a grader
		// appends to an ended run.
		return nil, nil
	}
	st := s.folds.FoldOn(log.Suite, log.Run, log.Records, len(log.Records), stop.New, stop.Fold)
	if !st.HasTurn(so.Turn) {
		return nil, bus.Permanent(fmt.Errorf("stall.observed %s observes turn %d, which has no turn.completed", sf.ID, so.Turn))
	}
	dec := stop.Decide(st, so.Turn, so.Observation, pol)
	if fin, ok := dec.Result.Variant().(events.StopFinish); ok && fin.Status == events.FinishDone && s.cfg.judge != nil {
		judged.once.Do(func() { judged.opinion, judged.call = s.ask(ctx, log, dec) })
		dec = stop.Review(dec, judged.opinion, pol)
	}
	// Kept once decided on, so the next decision folds on from it; but
	// a finish is the run's last decision (an ended run is not decided),
	// and a fold kept for it would only wait for the cache to evict it:
	// the decider's memory would follow the runs ended, not those in
	// flight. FoldOn took it out, so leaving it out drops it. Should the
	// commit conflict, Decide runs again and folds from the start.
	if _, finished := dec.Result.Variant().(events.StopFinish); !finished {
		s.folds.Put(log.Suite, log.Run, st, log.Records, len(log.Records))
	}
	f, err := s.sh.Fact(events.Meta{
		Suite: log.Suite, Run: log.Run, TaskGeneration: dec.TaskGeneration,
		Position: log.NextPosition(), Causation: sf.ID.String(),
	}, events.StopDecided{Decision: dec, Judge: judged.call})
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("stop.decided for turn %d: %w", so.Turn, err))
	}
	return []bus.Pending{{Fact: f, MsgID: MsgID(log.Run, so.Turn)}}, nil
}

// ask calls the judge within its timeout; failures become a timeout or a
// refusal, which change nothing. It returns the judge's call as the
// evaluator's spend (its reviewer, usage and latency), answered or not;
// nil when the judge named no reviewer, as there is no model to name.
func (s *Service) ask(ctx context.Context, log bus.RunLog, dec events.StopDecision) (stop.Opinion, *events.JudgeCall) {
	jctx, cancel := context.WithTimeout(ctx, s.cfg.judgeTimeout)
	defer cancel()
	t0 := time.Now()
	o, err := s.cfg.judge(jctx, JudgeRequest{Suite: log.Suite, Run: log.Run, Turn: dec.Turn, Decision: dec})
	var call *events.JudgeCall
	if o.Reviewer != "" {
		call = &events.JudgeCall{Model: o.Reviewer, Usage: o.Usage, Millis: uint64(time.Since(t0).Milliseconds())}
	}
	switch {
	case err == nil:
		return o, call
	case errors.Is(err, context.DeadlineExceeded):
		s.sh.Log.Warn("judge timed out; the checks decide", "run", log.Run, "turn", dec.Turn)
		return stop.Opinion{Reviewer: o.Reviewer, Verdict: stop.VerdictTimeout}, call
	default:
		s.sh.Log.Warn("judge failed; the checks decide", "run", log.Run, "turn", dec.Turn, "err", err)
		return stop.Opinion{Reviewer: o.Reviewer, Verdict: stop.VerdictRefused, Reason: err.Error()}, call
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
	for _, n := range c.Needs() {
		p.Requirements = append(p.Requirements, stop.Requirement{ID: events.RequirementID(n.ID), Check: n.Check, Write: n.Write})
	}
	return p
}
