// Package kit is what every service shell shares: the options that
// configure an instance (its name, logger, durable consumer and cache
// sizes), each checked as it is applied, the instance's default name, and
// the consume-load-decide-commit loop. A service describes itself once in a Spec (its role, what it
// consumes, its own defaults) and New turns the Spec and a caller's options
// into a Shell.
//
// The kit imports no service; services import the kit. It holds no
// decision logic: the pure cores stay with their services.
package kit

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases/caseload"
	"github.com/factline/factline/events"
)

// Spec is what a service tells the kit about itself. Its defaults are the
// service's own, and where services differ the Spec is where the
// difference is written down: the staller and the decider name their
// instances <host>-<pid> while the runner, the grader and the meter put
// their role in front, the staller tries a delivery ten times where the
// others take the bus's five, the runner and the grader pull on demand,
// and each keeps caches of its own sizes (the runner's grow with its
// workers).
type Spec struct {
	// Owner is the service's role: the producer of its facts, the
	// "service" of its log lines and the prefix of its errors.
	Owner events.Owner
	// Consumer is the durable consumer every instance shares.
	Consumer string
	// Filters are the subjects it consumes.
	Filters []string
	// InstancePrefix starts the default instance name,
	// "<prefix>-<host>-<pid>"; without one it is "<host>-<pid>".
	InstancePrefix string
	// RunCache, PolicyCache and SuiteCache are the default sizes of the
	// caches the service keeps (runs kept loaded, cases decoded under
	// their treatments, suites kept folded). 0 means it keeps no such
	// cache, and the option that sizes it is refused.
	RunCache, PolicyCache, SuiteCache int
	// RunCachePerWorker, for a service without a fixed RunCache, sizes
	// its run cache by its workers instead: that many runs for each
	// delivery it handles at once. The runner keeps the runs it drives
	// and little more, so its cache grows with its concurrency.
	RunCachePerWorker int
	// MaxDeliver is how many times a delivery is tried when the options
	// leave it unset (0: the bus's default).
	MaxDeliver int
	// MaxAckPending bounds the consumer's unacknowledged deliveries across
	// all instances when the options leave it unset (0: the bus's
	// default). A service that holds each delivery for as long as its
	// handler works (the runner, for a whole run) sets it to the most
	// that may be in flight fleet-wide.
	MaxAckPending int
	// OnDemand pulls a delivery only when a worker is free, whatever the
	// options say: for handlers that may outlive the ack wait, behind
	// which a prefetched delivery would be redelivered until it counted
	// as poison.
	OnDemand bool
	// Workers is how many deliveries an instance handles at once when the
	// options leave it unset (0: the bus's default, one).
	Workers int
	// OrderByRun handles the deliveries of one run one at a time, in
	// order, and different runs in parallel, whatever the options say
	// (see bus.ConsumerConfig.OrderByRun): for a service that folds a
	// run's facts and answers each in turn, whose workers may then be
	// many without two of them ever deciding about one run at once.
	OrderByRun bool
}

// Shell is one configured instance of a consumer service: the bus, who it
// is, its log, its durable consumer and its caches. A service keeps one
// and runs its loop through it.
type Shell struct {
	// Bus is what the instance reads and appends through.
	Bus *bus.Bus
	// Instance names the instance in the facts it writes
	// (producer.instance).
	Instance string
	// Log is the instance's logger, its service and instance attached.
	Log *slog.Logger
	// Runs is the service's run cache, the run logs it loaded recently;
	// nil when the service keeps none.
	Runs *bus.RunLogs
	// Policies caches cases decoded under their treatments; nil when the
	// service keeps none.
	Policies *caseload.Cache
	// SuiteCache bounds how many suites' folded facts the service keeps
	// (0 when it keeps none).
	SuiteCache int

	owner    events.Owner
	consumer bus.ConsumerConfig
	base     *slog.Logger // the caller's logger, before Log's attributes
	runs     int          // the run cache's size
}

// New configures an instance of the service spec describes, on b. It
// applies opts in order over the spec's defaults: the shared options to
// the shell, a service's own options (made with Own) to own, which may be
// nil for a service that has none. A bad value, or an option the service
// does not take, is an *OptionError.
func New[X any](b *bus.Bus, spec Spec, own *X, opts ...Option) (*Shell, error) {
	if b == nil {
		return nil, fmt.Errorf("%s: no bus", spec.Owner)
	}
	s := settings{spec: spec, runs: spec.RunCache, policies: spec.PolicyCache, suites: spec.SuiteCache}
	if own != nil {
		// Left untyped when nil, so that an own option of any service is
		// refused rather than applied to a nil pointer.
		s.own = own
	}
	for _, o := range opts {
		if o == nil {
			return nil, &OptionError{Service: spec.Owner, Option: "nil", Reason: "an option is nil"}
		}
		if err := o(&s); err != nil {
			return nil, err
		}
	}
	if s.instance == "" {
		s.instance = LocalInstance(spec.InstancePrefix)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.consumer.Name = spec.Consumer
	s.consumer.Filters = spec.Filters
	if s.consumer.MaxDeliver == 0 {
		s.consumer.MaxDeliver = spec.MaxDeliver
	}
	if s.consumer.MaxAckPending == 0 {
		s.consumer.MaxAckPending = spec.MaxAckPending
	}
	if spec.OnDemand {
		s.consumer.OnDemand = true
	}
	if spec.OrderByRun {
		s.consumer.OrderByRun = true
	}
	if s.consumer.Workers == 0 {
		s.consumer.Workers = spec.Workers
	}
	if s.runs == 0 && spec.RunCachePerWorker > 0 {
		// No WithRunCache (it refuses 0): the default follows the workers.
		s.runs = spec.RunCachePerWorker * max(s.consumer.Workers, 1)
	}
	sh := &Shell{
		Bus:        b,
		Instance:   s.instance,
		Log:        s.log.With("service", string(spec.Owner), "instance", s.instance),
		SuiteCache: s.suites,
		owner:      spec.Owner,
		consumer:   s.consumer,
		base:       s.log,
		runs:       s.runs,
	}
	if s.runs > 0 {
		sh.Runs = b.NewRunLogs(s.runs)
	}
	if s.policies > 0 {
		sh.Policies = caseload.New(s.policies)
	}
	return sh, nil
}

// WrapLog puts wrap's handler between Log and the caller's logger, under
// the service and instance attributes, so that they pass through it too:
// for a service whose every log line must be filtered (the runner redacts
// secrets from them).
func (s *Shell) WrapLog(wrap func(slog.Handler) slog.Handler) {
	s.Log = slog.New(wrap(s.base.Handler())).With("service", string(s.owner), "instance", s.Instance)
}

// OnDeadLetter makes the consumer call fn after it moved a delivery to the
// dead letters, with the reason (see bus.ConsumerConfig.OnDeadLetter): for
// a service that records giving up on it, as the runner ends the run.
// Call it before Run.
func (s *Shell) OnDeadLetter(fn func(ctx context.Context, d bus.Delivery, reason string) error) {
	s.consumer.OnDeadLetter = fn
}

// RunCacheSize is how many runs Runs keeps loaded (0 without a run cache).
func (s *Shell) RunCacheSize() int { return s.runs }

// Consumer is the durable consumer the instance runs: its name, filters
// and settings, defaults not yet filled in by the bus.
func (s *Shell) Consumer() bus.ConsumerConfig { return s.consumer }
