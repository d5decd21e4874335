// Package grader is the grader's service shell: a durable consumer of
// candidate.sealed and run.ended, shared by any number of instances, that
// grades the sealed final candidate of a run. It restores the candidate
// from the blob store into a fresh directory (never the runner's live
// workspace, so graders can run on any machine), runs the case's
// instruments, commits one grade.instrument per instrument and then the
// grade.verdict (and any grade.conflict) that the pure core in package grade
// decides.
//
// Command instruments run code the model wrote, so they run contained
// like the runner's commands (package sandbox): the grader probes what its
// host grants once, in New, gives every command a sandbox of its own and
// records the containment in the command's grade.instrument fact.
//
// Every instrument result is committed as soon as it exists, under a
// deterministic message ID, so a grader that dies mid-batch is resumed by
// the redelivered fact and runs exactly the instruments that have no
// committed result. The grader never writes a runner fact: it cannot rerun
// the actor or change why a run ended.
package grader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/services/grader/grade"
	"github.com/factline/factline/services/kit"
)

// ConsumerName is the durable consumer every grader instance shares.
const ConsumerName = "grader"

// JudgeFactory builds the model a judge instrument names.
type JudgeFactory func(ctx context.Context, in cases.Instrument) (models.Model, error)

// Execution names one instrument run, for WithExecuteHook.
type Execution struct {
	Suite, Run string
	Snapshot   events.Digest
	Instrument events.InstrumentID
	Version    string
}

// config is the grader's own settings, besides the kit's.
type config struct {
	workDir string
	judges  JudgeFactory
	hook    func(context.Context, Execution)
	contain *sandbox.Config
}

// spec is the grader to the kit. Its instances are named
// grader-<host>-<pid> by default, it keeps fewer runs loaded than the
// staller and the decider (256) and 64 decoded cases, and it pulls a
// delivery only when a worker is free: grading runs the case's
// instruments, commands that may take minutes, and a delivery prefetched
// behind them would be redelivered every ack wait until it counted as
// poison.
var spec = kit.Spec{
	Owner:          events.OwnerGrader,
	Consumer:       ConsumerName,
	Filters:        []string{events.KindFilter(events.KindCandidateSealed), events.KindFilter(events.KindRunEnded)},
	InstancePrefix: "grader",
	RunCache:       256,
	PolicyCache:    64,
	OnDemand:       true,
}

// WithWorkDir sets where candidates are restored (default the OS temporary
// directory). Every instrument run gets a fresh directory there, named
// after the grader's process and removed afterwards; what dead graders
// left there is removed when a grader starts and before each grading
// (sandbox.Reap). An empty dir is refused.
func WithWorkDir(dir string) kit.Option {
	return kit.OwnIf("WithWorkDir", dir != "", "the work directory is empty", func(c *config) { c.workDir = dir })
}

// WithJudges sets how judge models are built (default DefaultJudges). A
// nil factory is refused.
func WithJudges(f JudgeFactory) kit.Option {
	return kit.OwnIf("WithJudges", f != nil, "the judge factory is nil", func(c *config) { c.judges = f })
}

// WithExecuteHook calls fn just before each instrument runs. It is for
// observation (counting executions in tests, metrics); it must not block
// for long. A nil fn is refused.
func WithExecuteHook(fn func(context.Context, Execution)) kit.Option {
	return kit.OwnIf("WithExecuteHook", fn != nil, "the hook is nil", func(c *config) { c.hook = fn })
}

// Service is one grader instance.
type Service struct {
	sh    *kit.Shell
	cfg   config
	locks keyedMutex
	// containment is what the host grants command instruments; nil when
	// the probe failed (probeErr), and then every command is errored.
	containment *sandbox.Containment
	probeErr    error
	// engine is the container engine commands with an environment use.
	engine sandbox.Engine
}

// New returns a grader instance on b, configured by the kit's shared
// options (it keeps a run cache and a policy cache, no suite cache) and
// its own (WithWorkDir, WithJudges, WithExecuteHook, WithContainment).
// Start it with Run. It probes the containment of command instruments
// once; a host on which even a plain contained command cannot run still
// gets a grader, whose command instruments are errored (never failed) with
// the probe's reason.
func New(b *bus.Bus, opts ...kit.Option) (*Service, error) {
	c := config{workDir: os.TempDir(), judges: DefaultJudges}
	sh, err := kit.New(b, spec, &c, opts...)
	if err != nil {
		return nil, err
	}
	s := &Service{sh: sh, cfg: c, locks: keyedMutex{m: map[string]*lockEntry{}}}
	s.probe()
	return s, nil
}

// Run consumes candidate.sealed and run.ended until ctx is done. A delivery
// in progress at shutdown is handed back unfinished; the next grader resumes
// it from the committed results.
func (s *Service) Run(ctx context.Context) error {
	// Every verdict is counted from 0, and the grading latency's count
	// too: an alert or panel over the first failure would otherwise see
	// no data rather than an increase.
	metrics.GradingSeconds.WithLabelValues()
	for _, r := range events.VerdictResultTypes() {
		metrics.Verdicts.WithLabelValues(r).Add(0)
	}
	return s.sh.Run(ctx, s.Handle, "containment", summary(s.containment.Record()))
}

// Handle grades the run a candidate.sealed or run.ended delivery belongs to.
// Both facts lead to the same idempotent work: grade the newest sealed
// candidate, or grade the run invalid when it ended without one.
func (s *Service) Handle(ctx context.Context, d bus.Delivery) error {
	switch d.Fact.Body.(type) {
	case events.CandidateSealed, events.RunEnded:
	default:
		return bus.Permanent(fmt.Errorf("grader: delivered %s, want candidate.sealed or run.ended", d.Fact.Kind()))
	}
	return s.grade(ctx, d.Fact.Suite, d.Fact.Run, nil, d.Seq)
}

// Grade grades a run under its case's grading section: it runs the
// instruments that have no committed result on the newest sealed candidate
// and commits the verdict. Calling it again is safe and cheap: with every
// result and the verdict committed it appends nothing.
func (s *Service) Grade(ctx context.Context, suite, run string) error {
	return s.grade(ctx, suite, run, nil, 0)
}

// Regrade grades a run's newest sealed candidate under another grading
// section, e.g. one with a new version of an instrument. Results of
// instruments whose ID and version are unchanged are reused, not rerun; the
// grade gets a new revision, earlier revisions stay, and where a new result
// disagrees with the previous revision a grade.conflict is appended.
func (s *Service) Regrade(ctx context.Context, suite, run string, g *cases.Grading) error {
	if g == nil {
		return errors.New("grader: regrade needs a grading section")
	}
	return s.grade(ctx, suite, run, g, 0)
}

// grade grades a run; through, when not 0, is the stream sequence of the
// delivered fact that asked for it, which the loaded run must hold.
func (s *Service) grade(ctx context.Context, suite, run string, override *cases.Grading, through uint64) (err error) {
	unlock, err := s.locks.lock(ctx, suite+"/"+run)
	if err != nil {
		return err
	}
	defer unlock()
	// A grading taken over from a grader that died here finds its
	// leftovers gone.
	s.reap(ctx)
	log, err := s.sh.Runs.LoadThrough(ctx, suite, run, through)
	if err != nil {
		return fmt.Errorf("grader: load %s/%s: %w", suite, run, err)
	}
	if facts := log.Facts(); len(facts) > 0 && facts[0].Kind() == events.KindRunDelegated {
		// A child run is part of its parent's attempt, which alone is
		// graded.
		return nil
	}
	st := grade.Fold(log.Facts())
	if st.Ended {
		// Graded once ended, the run is not read here again but to
		// regrade it, which loads it anew: its log kept would only wait
		// for eviction, and the cache would hold the runs ended (up to
		// its size) rather than those in flight.
		defer func() {
			if err == nil {
				s.sh.Runs.Forget(suite, run)
			}
		}()
	}
	req, ok := log.Requested()
	if !ok {
		return bus.Permanent(fmt.Errorf("grader: %s/%s has no run.requested, so the case it is graded by is unknown", suite, run))
	}
	if st.Snapshot == "" {
		if !st.Ended {
			return nil // the candidate may still be sealed; run.ended brings us back
		}
		return s.commit(ctx, suite, run, func(st grade.Run) grade.Decision { return grade.DecideInvalid(st, run) })
	}
	start := time.Now()
	defer func() { metrics.GradingSeconds.WithLabelValues().Observe(time.Since(start).Seconds()) }()
	eff, err := s.sh.Policies.ForRequest(ctx, s.sh.Bus, req)
	in := inputs{kase: eff.Case, treat: eff.Treatment}
	if err != nil {
		return err
	}
	g := in.kase.Grading
	if override != nil {
		if g, err = checkedGrading(in.kase, override); err != nil {
			return err
		}
	}
	plan, specs := planOf(g)
	snapshot := st.Snapshot
	if pending := st.Pending(snapshot, plan); len(pending) > 0 {
		if err := s.execute(ctx, job{suite: suite, run: run, snapshot: snapshot, in: in, specs: specs, scorers: plan.Scorers}, pending); err != nil {
			return err
		}
	}
	return s.commit(ctx, suite, run, func(st grade.Run) grade.Decision { return grade.Decide(st, run, snapshot, plan) })
}

// checkedGrading validates a grading section against the case it applies
// to, the way loading the case would.
func checkedGrading(kase *cases.Case, g *cases.Grading) (*cases.Grading, error) {
	c := *kase
	c.Grading = g
	data, err := c.Encode()
	if err != nil {
		return nil, fmt.Errorf("grader: regrade: %w", err)
	}
	back, err := cases.DecodeCase(data)
	if err != nil {
		return nil, fmt.Errorf("grader: regrade: %w", err)
	}
	return back.Grading, nil
}

// Plan is the grading plan the core decides a case's verdicts under: what
// the grader grades a run of the case by, and what the audit re-derives its
// verdicts with (ops/audit).
func Plan(g *cases.Grading) grade.Policy {
	p, _ := planOf(g)
	return p
}

// planOf turns a case's grading section into the core's plan, keeping each
// instrument's full description by key.
func planOf(g *cases.Grading) (grade.Policy, map[grade.Key]cases.Instrument) {
	specs := map[grade.Key]cases.Instrument{}
	if g == nil {
		return grade.Policy{}, specs
	}
	p := grade.Policy{AllowMissingAdvisory: g.AllowMissingAdvisory}
	for _, in := range g.Instruments {
		gi := grade.Instrument{ID: events.InstrumentID(in.ID), Version: in.Version, Required: in.IsRequired(),
			Binding: in.IsBinding(), Requirement: events.RequirementID(in.RequirementID())}
		p.Instruments = append(p.Instruments, gi)
		specs[gi.Key()] = in
	}
	for _, sc := range g.Scorers {
		gs := grade.Scorer{ID: sc.ID, Instrument: events.InstrumentID(sc.Instrument), Key: sc.Key,
			Min: sc.Min(), Max: sc.Max(), LowerIsBetter: !sc.Higher()}
		if sc.Decides {
			gs.PassAt = sc.PassAt
		}
		p.Scorers = append(p.Scorers, gs)
	}
	return p, specs
}

// execute runs the pending instruments one by one, committing each result
// as soon as it exists. A result cut short by this grader's own shutdown is
// never committed: the next grader runs that instrument again.
func (s *Service) execute(ctx context.Context, j job, pending []grade.Instrument) error {
	env := &instrumentEnv{s: s, job: j}
	defer env.close()
	for _, gi := range pending {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.cfg.hook != nil {
			s.cfg.hook(ctx, Execution{Suite: j.suite, Run: j.run, Snapshot: j.snapshot, Instrument: gi.ID, Version: gi.Version})
		}
		res, contained, judged := env.run(ctx, j.specs[gi.Key()])
		if err := ctx.Err(); err != nil {
			return err
		}
		res.Instrument, res.Version, res.Required = gi.ID, gi.Version, gi.Required
		k := gi.Key()
		_, err := s.sh.Bus.Commit(ctx, s.sh.Runs, j.suite, j.run, func(log bus.RunLog) ([]bus.Pending, error) {
			st := grade.Fold(log.Facts())
			if _, done := st.Results[j.snapshot][k]; done {
				return nil, nil
			}
			f, err := s.fact(log, st, events.GradeInstrument{SnapshotDigest: j.snapshot, Result: res, Containment: contained, Judge: judged}, 0)
			return []bus.Pending{{Fact: f, MsgID: grade.InstrumentMsgID(j.run, j.snapshot, k)}}, err
		})
		if err != nil {
			return fmt.Errorf("grader: commit %s of %s/%s: %w", k, j.suite, j.run, err)
		}
		s.sh.Log.Debug("instrument", "suite", j.suite, "run", j.run, "instrument", k.String(), "outcome", res.Outcome)
	}
	return nil
}

// commit appends what the core decides on the run as it is when appended.
func (s *Service) commit(ctx context.Context, suite, run string, decide func(grade.Run) grade.Decision) error {
	recs, err := s.sh.Bus.Commit(ctx, s.sh.Runs, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
		st := grade.Fold(log.Facts())
		d := decide(st)
		if d.Verdict == nil {
			return nil, nil
		}
		v := *d.Verdict
		// The conflicts go before the revision they come with: a reader
		// that folds the log up to the new verdict (the meter, settling on
		// its delivery) has then seen every conflict that disputes it, and
		// a crash between the appends leaves the dispute standing rather
		// than an undisputed grade.
		var out []bus.Pending
		for i, c := range d.Conflicts {
			f, err := s.fact(log, st, c, i)
			if err != nil {
				return nil, err
			}
			out = append(out, bus.Pending{Fact: f, MsgID: grade.ConflictMsgID(run, c.SnapshotDigest, c.Revision, c.Instrument)})
		}
		f, err := s.fact(log, st, events.GradeVerdict{Verdict: v}, len(out))
		if err != nil {
			return nil, err
		}
		return append(out, bus.Pending{Fact: f, MsgID: grade.VerdictMsgID(run, v.SnapshotID, v.Revision)}), nil
	})
	if err != nil {
		return fmt.Errorf("grader: commit the grade of %s/%s: %w", suite, run, err)
	}
	for _, r := range recs {
		if gv, ok := r.Fact.Body.(events.GradeVerdict); ok && !r.Duplicate {
			s.sh.Log.Info("graded", "suite", suite, "run", run, "revision", gv.Verdict.Revision, "result", gv.Verdict.Result.Type())
			metrics.Verdicts.WithLabelValues(string(gv.Verdict.Result.Type())).Inc()
		}
	}
	return nil
}

// fact builds a grader fact at the log's next position plus offset.
func (s *Service) fact(log bus.RunLog, st grade.Run, body events.Body, offset int) (events.Fact, error) {
	var causation string
	if n := len(log.Records); n > 0 {
		causation = log.Records[n-1].Fact.ID.String()
	}
	return s.sh.Fact(events.Meta{
		Suite: log.Suite, Run: log.Run, TaskGeneration: st.Generation, Position: log.NextPosition() + uint64(offset),
		Causation: causation,
	}, body)
}

// inputs is what grading a run needs besides its log: the case and the
// treatment it ran under.
type inputs struct {
	kase  *cases.Case
	treat *cases.Treatment
}

// keyedMutex serialises work on one run within this instance, so that the
// candidate.sealed and run.ended of one run, handled by two workers, do not
// run the same instruments twice. Across instances the message IDs keep the
// log right; a duplicate execution there is only wasted work.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*lockEntry
}

type lockEntry struct {
	ch   chan struct{}
	refs int
}

func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	e := k.m[key]
	if e == nil {
		e = &lockEntry{ch: make(chan struct{}, 1)}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
