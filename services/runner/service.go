// Package runner is the runner service: it claims requested runs, drives
// the model/tool loop under the case's budgets and tool contracts, commits
// every step as a fact, and ends the run when the stop decider says so or a
// hard limit is reached. Its pure core, what a run's facts imply (spend,
// limits, history, progress, verification), is package step.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner/extensions"
	"github.com/factline/factline/services/runner/step"
	"github.com/factline/factline/services/runner/tools"
)

// Workspace is the working tree of one attempt, as the runner needs it.
type Workspace interface {
	// Root is the directory tools work in.
	Root() string
	// Resolve maps a tool's path into the workspace or refuses it.
	Resolve(rel string) (string, error)
	// Digest is the current content digest of the tree.
	Digest() events.Digest
	// Refresh rescans the tree after a tool ran and reports whether its
	// digest changed.
	Refresh(ctx context.Context) (bool, error)
	// Seal stores the tree so any machine can restore it, returning its
	// digest and file count.
	Seal(ctx context.Context) (events.Digest, int, error)
}

// Workspaces opens attempt workspaces.
type Workspaces interface {
	// Open materialises the stored tree named by fixture (empty: an empty
	// tree) in a fresh directory under dir.
	Open(ctx context.Context, fixture events.Digest, dir string) (Workspace, error)
}

// ModelFactory builds the model an attempt talks to.
type ModelFactory func(ctx context.Context, c *cases.Case, t *cases.Treatment) (models.Model, error)

// Service is a runner: it takes run.requested facts from a durable consumer
// shared by every runner and drives each run to its end.
type Service struct {
	sh *kit.Shell
	// What the attempts read, taken out of the shell and the options.
	bus             *bus.Bus
	runs            *bus.RunLogs // the run cache: logs of the runs it drives
	workspaces      Workspaces
	models          ModelFactory
	instance        string
	workDir         string
	decisionTimeout time.Duration
	approvalTimeout time.Duration
	afterCommit     func(events.Fact)
	extensions      *extensions.Allowlist
	log             *slog.Logger // the shell's, through the secret redactor
	secrets         *secrets.Redactor
	// slotLease is the lease of a fleet-wide model limit's slot.
	slotLease time.Duration
	// containment is what the host grants commands, probed in New.
	containment *sandbox.Containment
	// engine is the container engine attempts with an environment use.
	engine sandbox.Engine
	// storedContainments holds the digests of the containment blobs this
	// instance has stored (events.Digest → struct{}): its claims name the
	// same record run after run, which is put once, not at every claim.
	storedContainments sync.Map
	// handedBack is the runs stopped mid-way at shutdown, said in one
	// line as Run returns.
	handedBack handedBack
}

// beforeClaimHook is a seam for tests only (export_test.go sets it, for
// one Service, and clears it when the test ends): it runs just before an
// attempt commits its claim, the window in which another attempt may still
// settle work. It is not a field of Service so that what a runner is built
// of holds nothing but what runs in production.
var beforeClaimHook atomic.Pointer[func(s *Service, ctx context.Context, suite, run string)]

// ConsumerName is the durable consumer every runner shares.
const ConsumerName = "runner"

// spec is the runner to the kit. Its instances are named
// runner-<host>-<pid> by default, a request is tried the bus's five times
// (a run that keeps failing is a harness problem worth a dead letter, not
// an endless loop; a few tries ride out a failover), its run cache holds
// four runs for each run it drives at once, and it pulls a request only
// when a worker is free: a run takes minutes, and a request prefetched
// behind busy workers would be redelivered every ack wait until it
// counted as poison. It reads no cases through the kit's policy cache.
var spec = kit.Spec{
	Owner:    events.OwnerRunner,
	Consumer: ConsumerName,
	// A child run a delegate call starts is taken like a requested one.
	Filters:           []string{events.KindFilter(events.KindRunRequested), events.KindFilter(events.KindRunDelegated)},
	InstancePrefix:    "runner",
	RunCachePerWorker: 4,
	MaxDeliver:        5,
	MaxAckPending:     MaxRunsInFlight,
	OnDemand:          true,
}

// MaxRunsInFlight is how many runs the whole fleet's runners may drive at
// once. A runner holds a run's delivery unacknowledged for the whole run,
// so the consumer's MaxAckPending is that ceiling: at the bus's default of
// 256 a fleet of any size drove at most 256 runs. Each runner process is
// bounded by its own slots (WithWorkers; it pulls only when one is free),
// so this only has to be above every fleet's total (docs/scaling.md).
const MaxRunsInFlight = 1 << 20

// New returns a runner on b, configured by the kit's shared options
// (WithWorkers is how many runs it drives at once; it keeps a run cache,
// no policy or suite cache) and its own (WithWorkspaces, WithModels,
// WithWorkDir, WithDecisionTimeout, WithApprovalTimeout, WithExtensions,
// WithAfterCommit, WithContainment, WithSecrets, WithModelSlotLease). Start it with Run. It
// probes once what containment the host grants its commands (a process
// keeps the answer: sandbox.Probe).
func New(b *bus.Bus, opts ...kit.Option) (*Service, error) {
	c := config{models: Models, workDir: os.TempDir(), decisionTimeout: 10 * time.Minute, approvalTimeout: time.Hour}
	if b != nil {
		c.workspaces = StoredWorkspaces{Blobs: b.Blobs()}
	}
	sh, err := kit.New(b, spec, &c, opts...)
	if err != nil {
		return nil, err
	}
	if err := CheckAckWait(sh.Consumer().AckWait); err != nil {
		// Set by WithAckWait or WithConsumer.
		return nil, &kit.OptionError{Service: events.OwnerRunner, Option: "WithAckWait", Reason: err.Error()}
	}
	if c.secrets == nil {
		if c.secrets, err = secrets.FromEnvironment(); err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
	}
	// Whatever the logger is, the runner's log lines pass through the
	// secret redactor.
	sh.WrapLog(func(h slog.Handler) slog.Handler { return secrets.NewHandler(h, c.secrets) })
	s := &Service{sh: sh, bus: b, runs: sh.Runs, workspaces: c.workspaces, models: c.models, instance: sh.Instance,
		workDir: c.workDir, decisionTimeout: c.decisionTimeout, approvalTimeout: c.approvalTimeout,
		afterCommit: c.afterCommit, extensions: c.extensions, log: sh.Log, secrets: c.secrets, slotLease: c.slotLease,
		handedBack: handedBack{listed: c.handedBackListed}}
	sh.OnDeadLetter(s.gaveUp)
	contain := sandbox.DefaultConfig(s.workDir)
	if c.contain != nil {
		contain = *c.contain
	}
	s.engine = contain.Engine
	// What dead runners left here goes before this one adds its own.
	s.reap(context.Background())
	contain.WorkDir = s.workDir
	if s.containment, err = sandbox.Probe(context.Background(), contain); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	for _, f := range s.containment.Record().Features {
		if f.State == events.ContainmentUnsupported {
			s.log.Warn("command containment: unsupported on this host", "feature", f.Name, "reason", f.Detail)
		}
	}
	return s, nil
}

// Run takes requested runs until ctx ends. A run in progress at shutdown
// is handed back unfinished; whoever takes it next resumes it from the
// log. The runs handed back are logged in one warning as it returns
// (WithHandedBackListed), each one at INFO.
func (s *Service) Run(ctx context.Context) error {
	// The consumer returns once every delivery it handles has: the runs
	// stopped by ctx are all recorded by then.
	defer s.handedBack.say(s.log)
	zeroMetrics()
	return s.sh.Run(ctx, func(ctx context.Context, d bus.Delivery) error { return redactErr(s.secrets, s.handle(ctx, d)) })
}

// zeroMetrics exports the runner's counters at 0 for every value of their
// known labels (run statuses; built-in tools and dispositions), and its
// runs in flight: rate() and increase() over a series that first appears
// at 1 see no data until a second event, and the first errored run would
// go unseen. Extension tools and providers are known only per case.
func zeroMetrics() {
	metrics.RunsInFlight.WithLabelValues().Add(0)
	for _, st := range events.RunStatuses() {
		metrics.RunsEnded.WithLabelValues(string(st)).Add(0)
	}
	for _, t := range tools.Builtin() {
		for _, d := range events.Dispositions() {
			metrics.ToolDispatches.WithLabelValues(t.Contract().Name, string(d)).Add(0)
		}
	}
}

// gaveUp ends a run whose request was dead-lettered (every runner that
// took it died or failed): errored, naming why, so that its suite is
// still measured, with the attempt counted as a harness error, instead of
// waiting forever.
func (s *Service) gaveUp(ctx context.Context, d bus.Delivery, reason string) error {
	suite, run := d.Fact.Suite, d.Fact.Run
	rl, err := s.runs.LoadThrough(ctx, suite, run, d.Seq)
	if err != nil {
		return err
	}
	defer s.runs.Forget(suite, run)
	if rl.Ended() {
		return nil
	}
	s.log.Error("giving the run up", "suite", suite, "run", run, "reason", reason)
	a := s.newAttempt(suite, run, rl)
	if req, _, ok := requestOf(d.Fact); ok {
		// Best effort: the case's status lookup may still settle an
		// operation the run leaves in flight.
		if data, err := s.bus.Blobs().Get(ctx, req.CaseDigest); err == nil {
			a.kase, _ = cases.DecodeCase(data)
		}
	}
	return redactErr(s.secrets, a.finish(ctx, step.Ending{Status: events.RunErrored, Reason: "harness: gave up: " + reason}, rl))
}

// handle drives one requested run to its end.
func (s *Service) handle(ctx context.Context, d bus.Delivery) error {
	req, parent, ok := requestOf(d.Fact)
	if !ok {
		return bus.Permanent(fmt.Errorf("not a run.requested or run.delegated fact: %s", d.Fact.Kind()))
	}
	suite, run := d.Fact.Suite, d.Fact.Run
	log := s.log.With("suite", suite, "run", run)
	rl, err := s.runs.LoadThrough(ctx, suite, run, d.Seq)
	if err != nil {
		return err
	}
	defer s.runs.Forget(suite, run)
	claimed := false
	for _, r := range rl.Records {
		switch r.Fact.Body.(type) {
		case events.RunEnded:
			return nil // a redelivery of a finished run
		case events.RunClaimed:
			claimed = true
		}
	}
	if !claimed {
		// A run of a suite that stopped early, or was drained or
		// cancelled, is not started; one already started finishes (or, in
		// a cancelled suite, ends at its next boundary). A paused suite's
		// run waits here to start.
		end, err := s.beforeStart(ctx, suite, run)
		if err != nil {
			return err
		}
		// A hold may have lasted: read the run again before acting on it.
		if rl, err = s.runs.Load(ctx, suite, run); err != nil {
			return err
		}
		if rl.Ended() {
			return nil
		}
		if end.Ends() {
			log.Info("not run", "reason", end.Reason)
			a := s.newAttempt(suite, run, rl)
			return a.finish(ctx, end, rl)
		}
		if parent != nil {
			// A child whose parent has ended is owned by nobody: its
			// parent's cancel may have come before any runner took it.
			ended, err := s.parentEnded(ctx, suite, *parent)
			if err != nil {
				return err
			}
			if ended {
				log.Info("not run: its parent ended", "parent", parent.Run)
				a := s.newAttempt(suite, run, rl)
				return a.finish(ctx, step.Ending{Status: events.RunCancelled, Reason: ReasonParentEnded + ": " + parent.Run}, rl)
			}
		}
	}
	a, err := s.prepare(ctx, suite, run, req, rl, d.Lease)
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return lostLease(err) // the run ended or another runner claimed it meanwhile
		}
		if errors.Is(err, errBadInput) {
			// The run cannot start as requested: end it honestly so that
			// it is not retried forever and the reason is in the log.
			log.Warn("run cannot start", "err", err)
			a := s.newAttempt(suite, run, rl)
			return a.finish(ctx, step.Ending{Status: events.RunErrored, Reason: startReason(err)}, rl)
		}
		return err
	}
	defer a.close()
	metrics.RunsInFlight.WithLabelValues().Inc()
	defer metrics.RunsInFlight.WithLabelValues().Dec()
	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	a.work, a.ctl = work, newControls(stopWork)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	sigs, caughtUp, err := s.bus.Controls().WatchCaughtUp(watchCtx, suite, run)
	if err != nil {
		// Only a suite or run that is no subject token fails here (the
		// watch itself rides out the bus failing under it): no retry
		// fixes that.
		return bus.Permanent(err)
	}
	a.ctl.catchUp(ctx, log, sigs, caughtUp)
	go a.ctl.watch(sigs)
	var end step.Ending
	if a.eff.Treatment != nil && a.eff.Treatment.Agent != nil {
		end, err = a.external(ctx)
	} else {
		end, err = a.loop(ctx)
	}
	// The run's extension servers end with its last dispatch, before the
	// candidate is sealed, and so does its container: none outlives the
	// run's ending.
	a.release()
	if errors.Is(err, ErrLeaseLost) {
		log.Warn("stopping: another runner holds the run", "err", err)
		return lostLease(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			// Shutting down: the delivery is handed back and whoever takes
			// it next resumes from the log. The runner says every run it
			// hands back in one line as it stops (handedBack); each on its
			// own is detail.
			log.Info("the run stops here and resumes from the log", "err", err)
			s.handedBack.add(suite, run)
			return err
		}
		if bus.Transient(err) || errors.Is(err, errUnfenced) {
			// The bus failed under the run (a restart, a leader election,
			// a full store): the bus runs this delivery again in place
			// once it is back, without spending its delivery budget, and
			// the attempt resumes from the log the same way. Or an
			// external effect could not be fenced in time: the run is
			// handed back, and whoever takes it next reconciles the
			// operation before anything else.
			log.Warn("the run stops here and resumes from the log", "err", err)
			return err
		}
		end = step.Ending{Status: events.RunErrored, Reason: "harness: " + err.Error()}
	}
	log.Info("run ended", "status", end.Status, "reason", end.Reason)
	return a.finish(ctx, end, rl)
}

// requestOf is the request a run.requested or run.delegated fact makes,
// and the parent of a delegated one (nil otherwise).
func requestOf(f events.Fact) (events.RunRequested, *events.ParentRef, bool) {
	switch b := f.Body.(type) {
	case events.RunRequested:
		return b, nil, true
	case events.RunDelegated:
		return b.Request, &b.Parent, true
	}
	return events.RunRequested{}, nil, false
}

// inputErr classifies a failure to fetch what a run needs: a blob that is
// not there (or is corrupt) is bad input that no retry fixes; a bus that
// failed for a moment, or a shutdown, is not: the run is handed back.
func inputErr(what string, err error) error {
	if bus.Transient(err) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%w: %s: %v", errBadInput, what, err)
}

// errBadInput marks problems with what was requested (missing or invalid
// case, treatment or model): retrying cannot fix them.
var errBadInput = errors.New("bad run request")

// newAttempt is an attempt at run under the lease after the newest its
// log holds, begun now; its wall-time budget runs from now until prepare
// finds an earlier claim.
func (s *Service) newAttempt(suite, run string, rl bus.RunLog) *attempt {
	now := time.Now()
	return &attempt{svc: s, suite: suite, run: run, lease: step.CurrentLease(rl.Facts()) + 1, started: now, began: now}
}

// prepare claims the run and sets up its attempt. The attempt owns what it
// opens (its directory, its sandbox, its extension servers): whatever
// stops prepare, it closes them all before it returns.
func (s *Service) prepare(ctx context.Context, suite, run string, req events.RunRequested, rl bus.RunLog, hold *bus.Lease) (_ *attempt, err error) {
	a := s.newAttempt(suite, run, rl)
	a.requested, a.hold, a.epoch, a.gen = req, hold, 1, 1
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	for _, r := range rl.Records {
		if _, ok := r.Fact.Body.(events.RunClaimed); ok {
			// The wall-time budget runs from the first claim: a takeover
			// does not get a fresh allowance.
			a.started = r.Fact.At
			break
		}
	}
	kase, err := readInput(ctx, s.bus, "case "+req.Case, req.CaseDigest, cases.DecodeCase)
	if err != nil {
		return nil, err
	}
	treat, err := readInput(ctx, s.bus, "treatment "+req.Treatment, req.TreatmentDigest, cases.DecodeTreatment)
	if err != nil {
		return nil, err
	}
	a.kase, a.eff = kase, cases.Apply(kase, treat)
	// The scaffold as the treatment stores it: the prompt is rendered
	// from the stored case and treatment, never from a file, so that a
	// runner taking the run over sends the same bytes.
	if err := cases.CheckScaffold(kase, treat); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadInput, err)
	}
	if a.system, err = cases.SystemPrompt(kase, treat); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadInput, err)
	}
	if err := requestedPrompt(req.Components, a.system); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadInput, err)
	}
	if a.model, err = s.models(ctx, kase, treat); err != nil {
		return nil, fmt.Errorf("%w: model for %s under %s: %v", errBadInput, kase.ID, treat.ID, err)
	}
	if a.model, err = s.limited(a.model, treat); err != nil {
		return nil, fmt.Errorf("%w: model limits of %s: %v", errBadInput, treat.ID, err)
	}
	// A takeover is not charged the waits the run's replies recorded.
	a.queued = queueWait(rl.Facts())
	var toolOpts []tools.RegistryOption
	if kase.HTTP != nil && kase.HTTP.Timeout > 0 {
		toolOpts = append(toolOpts, tools.WithHTTPTimeout(kase.HTTP.Timeout.Std()))
	}
	if descs := cases.ToolDescriptions(kase, treat); len(descs) > 0 {
		toolOpts = append(toolOpts, tools.WithDescriptions(descs))
	}
	a.offered = cases.OfferedTools(kase, treat)
	if a.registry, err = tools.NewRegistry(a.offered, toolOpts...); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadInput, err)
	}
	// Before anything runs: an extension that is not allowlisted, or whose
	// executable is not the pinned file, never starts.
	admitted, err := extensions.Admit(s.extensions, kase.Extensions)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadInput, err)
	}
	// A takeover removes what a dead runner left on this host first. The
	// attempt's directory is named after this process, so that the next
	// runner here can tell whether it is still in use.
	s.reap(ctx)
	site, err := sandbox.OpenSite(s.workDir, siteKind, run)
	if err != nil {
		return nil, err
	}
	a.dir = site.Dir()
	home := filepath.Join(a.dir, "home")
	tmp := filepath.Join(a.dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// A run taken over resumes from the last workspace its log settled.
	from := kase.FixtureDigest
	if d := step.ReadProgress(rl.Facts()).Digest; d != "" {
		from = d
	}
	if a.ws, err = s.workspaces.Open(ctx, from, filepath.Join(a.dir, "ws")); err != nil {
		return nil, inputErr("workspace", err)
	}
	sb, err := a.sandbox(ctx, home, tmp)
	if err != nil {
		return nil, err
	}
	a.env.Sandbox = sb
	if sb.UID() != 0 {
		// The attempt's user may pass through its directory but not change
		// it: it cannot swap the workspace for a link elsewhere.
		if err := os.Chmod(a.dir, 0o711); err != nil {
			return nil, err
		}
	}
	a.env = tools.Env{Root: a.ws, Environ: minimalEnv(home, tmp, kase.Env), AllowURL: kase.HTTP.CheckURL, Sandbox: sb}
	// The claim comes after the extensions started, so that it records
	// what this runner admitted: their source, version and capabilities.
	// Its containment is the attempt's: a container's is read back from
	// inside it and names its image by digest.
	claim := events.RunClaimed{Runner: s.instance, Lease: a.lease, Containment: sb.Record()}
	if err := a.startExtensions(ctx, admitted, minimalEnv(home, tmp, nil), &claim); err != nil {
		return nil, err
	}
	if ag := treat.Agent; ag != nil {
		a.agentVersion = a.agentVersionOf(ctx, ag)
		claim.Containment = withAgentNetwork(claim.Containment, sb.Container())
	}
	if err := a.claimIdentity(&claim); err != nil {
		return nil, err
	}
	if err := s.containmentByDigest(ctx, &claim); err != nil {
		return nil, err
	}
	if h := beforeClaimHook.Load(); h != nil {
		(*h)(s, ctx, suite, run)
	}
	// Each attempt's claim has an ID of its own, so that a claim another
	// attempt made is never mistaken for this one's retried append.
	rec, err := a.commit(ctx, key(ulid.Make().String()), claim)
	if err == nil {
		err = a.resettle(ctx, kase.FixtureDigest, from, rec.Seq)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// resettle makes the attempt's workspace the one its log settled before
// its claim. The workspace was restored from the log as read before the
// claim (from); an attempt still holding the run (its delivery taken for
// lost while it was only slow) may have settled another dispatch since.
// Once the claim is committed no other attempt can append before it, so
// the log up to it is final: when it settled a different workspace, that
// one is restored in place of the first (the same directory, which
// extensions may already work in).
func (a *attempt) resettle(ctx context.Context, fixture, from events.Digest, claimSeq uint64) error {
	log, err := a.svc.runs.LoadThrough(ctx, a.suite, a.run, claimSeq)
	if err != nil {
		return err
	}
	want := fixture
	if d := step.ReadProgress(log.Facts()).Digest; d != "" {
		want = d
	}
	if want == from {
		return nil
	}
	a.svc.log.Info("the run moved on before the claim; restoring its newer workspace",
		"suite", a.suite, "run", a.run, "from", from, "to", want)
	root := a.ws.Root()
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("resettle the workspace: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			return fmt.Errorf("resettle the workspace: %w", err)
		}
	}
	ws, err := a.svc.workspaces.Open(ctx, want, root)
	if err != nil {
		return inputErr("workspace", err)
	}
	a.ws, a.env.Root = ws, ws
	return nil
}

// minimalEnv is the environment commands run with: a PATH, a HOME and a
// TMPDIR (TMP and TEMP alike) of the attempt's own outside the workspace
// (so caches never count as work), a locale,
// and what the case adds. Nothing else of the runner's environment (keys,
// tokens) reaches a command.
func minimalEnv(home, tmp string, extra map[string]string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// finish seals the candidate (when there is a workspace, and the run is
// no child) and ends the run with its handoff packet.
func (a *attempt) finish(ctx context.Context, end step.Ending, rl bus.RunLog) error {
	if err := a.settleOpen(ctx, end); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return lostLease(err)
		}
		return err
	}
	if a.ws != nil && (a.kase == nil || a.kase.Parent == nil) {
		// A child run seals no candidate: it is part of its parent's
		// attempt, which alone is graded.
		snap, files, err := a.ws.Seal(ctx)
		if bus.Transient(err) {
			// The bus failed under the seal (a blob put timing out while
			// a server restarts), not the workspace: the run is resumed
			// from the log and sealed again, never ended errored for it.
			return fmt.Errorf("seal the candidate: %w", err)
		}
		if err != nil {
			end = step.Ending{Status: events.RunErrored, Reason: fmt.Sprintf("%s; sealing the candidate failed: %v", end.Reason, err)}
		} else if _, err := a.commit(ctx, nil, events.CandidateSealed{
			SnapshotDigest: snap, FixtureDigest: a.kase.FixtureDigest, Files: uint32(files),
		}); err != nil {
			return err
		}
	}
	log, err := a.svc.runs.Load(ctx, a.suite, a.run)
	if err != nil {
		return err
	}
	facts := log.Facts()
	end = step.SurfaceUnknown(end, facts)
	spend := step.Tally(facts)
	metrics.RunsEnded.WithLabelValues(string(end.Status)).Inc()
	_, err = a.commit(ctx, nil, events.RunEnded{
		Status: end.Status, Reason: end.Reason, Steps: spend.Steps,
		Spent:        spend.Spent(uint64((time.Since(a.started) - queueWait(facts)).Milliseconds())),
		LastEvidence: step.LastEvidence(facts), NextAction: step.NextAction(end.Status),
	})
	if errors.Is(err, ErrLeaseLost) {
		return lostLease(err)
	}
	return err
}

// readInput reads the blob d that holds an attempt's input (what: "case
// <id>", "treatment <id>") and decodes it. A blob the store cannot give is
// judged by inputErr (transient, or bad input); one that does not decode
// is bad input, which no retry mends.
func readInput[T any](ctx context.Context, b *bus.Bus, what string, d events.Digest, decode func([]byte) (T, error)) (T, error) {
	var zero T
	data, err := b.Blobs().Get(ctx, d)
	if err != nil {
		return zero, inputErr(what, err)
	}
	v, err := decode(data)
	if err != nil {
		return zero, fmt.Errorf("%w: %s: %v", errBadInput, what, err)
	}
	return v, nil
}

// containmentByDigest replaces the claim's containment record by the digest
// of its blob, storing the blob first unless this instance already did: a
// runner's record is the same for every run it claims (its host's, or a
// container's of the same image), and ~1,300 bytes written in every claim
// were ~130 bytes of every turn of a ten-turn run (docs/benchmarks.md,
// issue 38).
func (s *Service) containmentByDigest(ctx context.Context, claim *events.RunClaimed) error {
	if claim.Containment == nil {
		return nil
	}
	data, d, err := events.ContainmentBlob(*claim.Containment)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if _, ok := s.storedContainments.Load(d); !ok {
		if _, err := s.bus.Blobs().Put(ctx, data); err != nil {
			return fmt.Errorf("claim: store the containment record: %w", err)
		}
		s.storedContainments.Store(d, struct{}{})
	}
	claim.Containment, claim.ContainmentDigest = nil, d
	return nil
}
