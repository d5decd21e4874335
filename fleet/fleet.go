// Package fleet is the one place that wires factline's five services. A
// process runs any subset of them, any number of instances each, through
// Start: factline serve and run, the benchmarks and the integration
// harnesses all start their services here, so there is one wiring to read
// and to change. Every instance is configured by the kit's options (the
// shared ones, and each service's own) and talks to the others only
// through the bus.
//
// It is the only package that imports every service; the services know
// neither each other nor it.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/staller"
)

// The services a fleet runs, by the names `factline serve --services`
// takes.
const (
	Decider = "decider"
	Grader  = "grader"
	Meter   = "meter"
	Runner  = "runner"
	Staller = "staller"
)

// Names are the services a fleet can run, sorted.
func Names() []string { return []string{Decider, Grader, Meter, Runner, Staller} }

// ErrUnknownService is what Start's error matches (errors.Is) when the
// options name a service that is not one of Names.
var ErrUnknownService = errors.New("unknown service")

// services builds one instance of each service on a bus, configured by
// options, and returns how to run it.
var services = map[string]build{
	Decider: runs(decider.New),
	Grader:  runs(grader.New),
	Meter:   runs(meter.New),
	Runner:  runs(runner.New),
	Staller: runs(staller.New),
}

// build configures one instance of a service and returns how to run it.
type build func(*bus.Bus, ...kit.Option) (func(context.Context) error, error)

// runs makes a service's constructor a build: every service is made by
// New(bus, options...) and runs by Run(ctx).
func runs[S interface{ Run(context.Context) error }](newService func(*bus.Bus, ...kit.Option) (S, error)) build {
	return func(b *bus.Bus, opts ...kit.Option) (func(context.Context) error, error) {
		s, err := newService(b, opts...)
		if err != nil {
			return nil, err
		}
		return s.Run, nil
	}
}

// Options say which services a fleet runs and how each instance is
// configured. The zero value runs one instance of every service on the
// bus given to Start, with each service's defaults.
type Options struct {
	// Services are the services to run, each named once (default: all of
	// Names).
	Services []string
	// Instances is how many instances of each service run (default 1).
	// Instances in one process share a name unless Instance names them.
	Instances int
	// Connect, when set, opens the bus instance i (from 0) of service
	// works on: a connection, or an identity, of its own. By default every
	// instance works on Start's bus. The buses it opens are the caller's
	// to close, after the fleet stopped.
	Connect func(service string, i int) (*bus.Bus, error)
	// Shared are options every instance of every service takes (a logger,
	// consumer settings), applied first.
	Shared []kit.Option
	// Per are options every instance of one service takes, by service
	// name (the runner's work directory and workers, a grader's hook),
	// applied after Shared.
	Per map[string][]kit.Option
	// Workers, by service name, is how many deliveries each instance of
	// that service handles at once (kit.WithWorkers), applied after Per:
	// for the stall handler and the stop decider, how many runs' turns
	// they work on at once (each run's in order); for the runner, how
	// many runs it drives. A service not named keeps its default; a
	// count below one, or an unknown service, is refused.
	Workers map[string]int
	// Instance, when set, returns options for instance i of service on its
	// bus b (its name, a directory of its own), applied last.
	Instance func(service string, i int, b *bus.Bus) []kit.Option
}

// Fleet is the services one Start runs.
type Fleet struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	errs   []error
}

// member is one configured instance, not yet running.
type member struct {
	run func(context.Context) error
	// which tells the instance apart in errors, which name its service
	// already: "" when it is its service's only one.
	which string
}

// Start configures every instance the options ask for and, once all of
// them are configured, runs each on a goroutine of its own until ctx ends
// or Stop is called. A bad option, an unknown service or a failed Connect
// is an error and nothing runs.
//
// A service that fails stops alone; the others go on, as they would in
// processes of their own. Wait reports its error.
func Start(ctx context.Context, b *bus.Bus, o Options) (*Fleet, error) {
	members, err := configure(b, o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &Fleet{cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Go(func() {
			if err := m.run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				f.mu.Lock()
				f.errs = append(f.errs, fmt.Errorf("%w%s", err, m.which))
				f.mu.Unlock()
			}
		})
	}
	go func() { wg.Wait(); cancel(); close(f.done) }()
	return f, nil
}

// configure builds every instance the options ask for.
func configure(b *bus.Bus, o Options) ([]member, error) {
	names := o.Services
	if len(names) == 0 {
		names = Names()
	}
	for i, n := range names {
		if services[n] == nil {
			return nil, unknown(n)
		}
		if slices.Contains(names[:i], n) {
			return nil, fmt.Errorf("fleet: service %s is named twice", n)
		}
	}
	for n := range o.Per {
		if services[n] == nil {
			return nil, unknown(n)
		}
	}
	for n, w := range o.Workers {
		if services[n] == nil {
			return nil, unknown(n)
		}
		if w < 1 {
			return nil, fmt.Errorf("fleet: %d workers for %s; an instance needs at least one", w, n)
		}
	}
	if o.Instances < 0 {
		return nil, fmt.Errorf("fleet: %d instances; a service runs at least once", o.Instances)
	}
	instances := max(o.Instances, 1)
	var members []member
	for _, n := range names {
		for i := range instances {
			which := ""
			if instances > 1 {
				which = fmt.Sprintf(" (instance %d)", i)
			}
			on := b
			if o.Connect != nil {
				var err error
				if on, err = o.Connect(n, i); err != nil {
					return nil, fmt.Errorf("fleet: connect %s%s: %w", n, which, err)
				}
			}
			opts := slices.Concat(o.Shared, o.Per[n])
			if w, ok := o.Workers[n]; ok {
				opts = append(opts, kit.WithWorkers(w))
			}
			if o.Instance != nil {
				opts = append(opts, o.Instance(n, i, on)...)
			}
			// The services' errors name them (the kit's options and
			// loop say whose they are).
			run, err := services[n](on, opts...)
			if err != nil {
				return nil, fmt.Errorf("fleet: %w%s", err, which)
			}
			members = append(members, member{run: run, which: which})
		}
	}
	return members, nil
}

func unknown(name string) error {
	return fmt.Errorf("fleet: %w %q (have: %s)", ErrUnknownService, name, strings.Join(Names(), ", "))
}

// Wait waits until every service stopped (the context given to Start
// ended, Stop was called, or each failed) and returns their errors, the
// first first, each naming its service (and the instance, when the
// service has several); nil when they stopped cleanly.
func (f *Fleet) Wait() error {
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}

// Stop stops every service (deliveries in progress are handed back
// unfinished, for another instance to resume from the log) and returns
// what Wait returns.
func (f *Fleet) Stop() error {
	f.cancel()
	return f.Wait()
}
