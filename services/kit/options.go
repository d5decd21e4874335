package kit

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// ErrInvalidOption is what every *OptionError matches with errors.Is.
var ErrInvalidOption = errors.New("invalid option")

// OptionError is an option New refused: its value is out of range, or the
// service does not take it.
type OptionError struct {
	Service events.Owner // the service being configured
	Option  string       // the option, e.g. "WithRunCache"
	Reason  string       // what is wrong with it
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%s: option %s: %s", e.Service, e.Option, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidOption) hold.
func (e *OptionError) Unwrap() error { return ErrInvalidOption }

// Option is one setting of a consumer service. One Option type serves
// every service's New, the way nats.go's PullMaxMessages serves both
// Consume and Messages: the shared options below configure any service,
// and a service's own options, made with Own, configure only that one
// (any other refuses them).
type Option func(*settings) error

// settings is what the options build, before New fills in the defaults.
type settings struct {
	spec     Spec
	instance string
	log      *slog.Logger
	consumer bus.ConsumerConfig
	runs     int
	policies int
	suites   int
	own      any // *X of the service's own settings, or nil
}

func (s *settings) refuse(option, format string, args ...any) error {
	return &OptionError{Service: s.spec.Owner, Option: option, Reason: fmt.Sprintf(format, args...)}
}

// sharedIf makes a shared option that sets one value: set applies it when
// valid holds, and otherwise it is refused for reason (OwnIf's twin for
// the settings every service has).
func sharedIf(name string, valid bool, reason string, set func(*settings)) Option {
	return func(s *settings) error {
		if !valid {
			return s.refuse(name, "%s", reason)
		}
		set(s)
		return nil
	}
}

// WithInstance names this instance in the facts it writes
// (producer.instance). The default is the service's (see Spec).
func WithInstance(name string) Option {
	return sharedIf("WithInstance", name != "", "the instance name is empty", func(s *settings) { s.instance = name })
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return sharedIf("WithLogger", l != nil, "the logger is nil", func(s *settings) { s.log = l })
}

// WithConsumer replaces the durable consumer's settings (workers,
// prefetch, ack wait, max deliveries, …); a zero field takes the default.
// Its name and filters, and what becomes of a dead letter, are always the
// service's own, so setting them is refused, as is a negative number.
func WithConsumer(cc bus.ConsumerConfig) Option {
	return func(s *settings) error {
		switch {
		case cc.Name != "" || len(cc.Filters) > 0:
			return s.refuse("WithConsumer", "name and filters are the service's own (%q, %v); leave them empty", s.spec.Consumer, s.spec.Filters)
		case cc.OnDeadLetter != nil:
			return s.refuse("WithConsumer", "OnDeadLetter is the service's own; leave it nil")
		case cc.MaxDeliver < 0:
			return s.refuse("WithConsumer", "MaxDeliver %d is negative", cc.MaxDeliver)
		case cc.AckWait < 0:
			return s.refuse("WithConsumer", "AckWait %s is negative", cc.AckWait)
		case cc.Prefetch < 0:
			return s.refuse("WithConsumer", "Prefetch %d is negative", cc.Prefetch)
		case cc.Workers < 0:
			return s.refuse("WithConsumer", "Workers %d is negative", cc.Workers)
		case cc.MaxAckPending < 0:
			return s.refuse("WithConsumer", "MaxAckPending %d is negative", cc.MaxAckPending)
		}
		s.consumer = cc
		return nil
	}
}

// WithWorkers sets how many deliveries this instance handles at once
// (default the service's, see Spec; one when it has none). A service
// that orders by run (Spec.OrderByRun) still handles one run's
// deliveries one at a time, so more workers than runs in flight buy
// nothing.
func WithWorkers(n int) Option {
	return sharedIf("WithWorkers", n >= 1, fmt.Sprintf("%d workers; an instance needs at least one", n),
		func(s *settings) { s.consumer.Workers = n })
}

// WithAckWait sets how long a delivery may go without an ack or a
// heartbeat before another instance gets it (default 30s). Every instance
// of a service must agree.
func WithAckWait(d time.Duration) Option {
	return sharedIf("WithAckWait", d > 0, fmt.Sprintf("ack wait %s is not positive", d),
		func(s *settings) { s.consumer.AckWait = d })
}

// WithMaxDeliver sets how many times a delivery is tried before it is
// dead-lettered (default the service's, see Spec).
func WithMaxDeliver(n int) Option {
	return sharedIf("WithMaxDeliver", n >= 1, fmt.Sprintf("%d deliveries; a message is delivered at least once", n),
		func(s *settings) { s.consumer.MaxDeliver = n })
}

// WithRunCache bounds how many runs the service keeps loaded (default the
// service's, see Spec). A service that loads no runs refuses it.
func WithRunCache(runs int) Option {
	return func(s *settings) error {
		return s.size("WithRunCache", "run", s.spec.RunCache+s.spec.RunCachePerWorker, runs, &s.runs)
	}
}

// WithPolicyCache bounds how many cases decoded under their treatments the
// service keeps (default the service's, see Spec). A service that reads no
// cases refuses it.
func WithPolicyCache(entries int) Option {
	return func(s *settings) error {
		return s.size("WithPolicyCache", "policy", s.spec.PolicyCache, entries, &s.policies)
	}
}

// WithSuiteCache bounds how many suites' folded facts the service keeps
// (default the service's, see Spec); an evicted suite is read again from
// the log when it is next needed. A service that folds no suites refuses
// it.
func WithSuiteCache(suites int) Option {
	return func(s *settings) error {
		return s.size("WithSuiteCache", "suite", s.spec.SuiteCache, suites, &s.suites)
	}
}

// size sets a cache size: the service must keep that cache, and a cache
// holds at least one entry.
func (s *settings) size(option, cache string, kept, n int, to *int) error {
	if kept == 0 {
		return s.refuse(option, "the %s keeps no %s cache", s.spec.Owner, cache)
	}
	if n < 1 {
		return s.refuse(option, "size %d; a cache holds at least one entry", n)
	}
	*to = n
	return nil
}

// Own makes an option of a service's own settings X: set applies it, and
// its error is refused as the option name's. Only a service whose own
// settings are an X takes it; any other refuses it.
func Own[X any](name string, set func(*X) error) Option {
	return func(s *settings) error {
		x, ok := s.own.(*X)
		if !ok {
			return s.refuse(name, "the %s does not take it: it is another service's option", s.spec.Owner)
		}
		if err := set(x); err != nil {
			return s.refuse(name, "%s", err.Error())
		}
		return nil
	}
}

// OwnIf makes an option of a service's own settings X that sets one value:
// set applies it when valid holds, and otherwise it is refused for reason.
// Most options of a service are this shape (a nil hook, an empty
// directory, a wait that is not positive), so each states only its check.
func OwnIf[X any](name string, valid bool, reason string, set func(*X)) Option {
	return Own(name, func(x *X) error {
		if !valid {
			return errors.New(reason)
		}
		set(x)
		return nil
	})
}
