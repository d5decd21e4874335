package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/limit"
	"github.com/factline/factline/ops/metrics"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner/step"
)

// WithModelSlotLease sets how long a slot of a fleet-wide model limit
// outlives the last renewal of the runner holding it (default
// limit.DefaultLease): a runner that dies mid-call frees its slot within
// it. A lease under a second is refused.
func WithModelSlotLease(d time.Duration) kit.Option {
	return kit.OwnIf("WithModelSlotLease", d >= time.Second, fmt.Sprintf("the model slot lease %s is under a second", d),
		func(c *config) { c.slotLease = d })
}

// limited wraps m in the fleet-wide limit its treatment sets, if any: the
// limit of its provider, endpoint and model, shared through the bus by
// every runner.
func (s *Service) limited(m models.Model, t *cases.Treatment) (models.Model, error) {
	l := t.Model.Limits
	if l == nil {
		return m, nil
	}
	spec := limit.Spec{}
	if l.MaxConcurrent != nil {
		spec.MaxConcurrent = *l.MaxConcurrent
	}
	if l.MaxRequestsPerMinute != nil {
		spec.MaxRequestsPerMinute = *l.MaxRequestsPerMinute
	}
	provider, base, name := limitProvider(t.Model.Provider), t.Model.BaseURL, t.Model.Name
	lim, err := limit.New(limit.Config{
		Store: limitStore{s.bus.Limits()}, Key: limit.Key(provider, base, name), Label: limit.Label(provider, base, name),
		Spec: spec, Holder: s.instance, Lease: s.slotLease, Observer: limitMetrics{}, Logger: s.log,
	})
	if err != nil {
		return nil, err
	}
	return limit.Wrap(m, lim), nil
}

// limitProvider names the provider in a limit's key: OpenAI's two APIs at
// one endpoint draw on one account's rate limits for a model, so their
// calls share one limit; every other provider is its own.
func limitProvider(provider string) string {
	if provider == cases.ProviderOpenAIResponses {
		return cases.ProviderOpenAI
	}
	return provider
}

// limitStore is the bus's LIMITS bucket as a limit.Store.
type limitStore struct{ *bus.Limits }

func (l limitStore) TakeSlot(ctx context.Context, key string, n int, holder string, lease time.Duration) (limit.Slot, bool, error) {
	s, ok, err := l.Limits.TakeSlot(ctx, key, n, holder, lease)
	if !ok || err != nil {
		return nil, ok, err
	}
	return s, true, nil
}

// limitMetrics exports what the limiters of this process do.
type limitMetrics struct{}

func (limitMetrics) Held(label string, delta int) {
	metrics.LimitSlotsHeld.WithLabelValues(label).Add(float64(delta))
}

func (limitMetrics) Waited(label string, d time.Duration) {
	metrics.LimitWait.WithLabelValues(label).Observe(d.Seconds())
}

func (limitMetrics) Adapted(label string, n int) {
	metrics.LimitAdaptive.WithLabelValues(label).Set(float64(n))
}

func (limitMetrics) Throttled(label string, status int) {
	metrics.LimitThrottled.WithLabelValues(label, strconv.Itoa(status)).Inc()
}

// queueWait is the waits the run's replies recorded (step.QueueWaitMs).
func queueWait(facts []events.Fact) time.Duration {
	return time.Duration(step.QueueWaitMs(facts)) * time.Millisecond
}

// wallUsed is the wall time the run has spent against its budget: since
// its first claim, less the time its model calls waited for a slot of a
// fleet-wide limit (as their replies recorded it, and the wait of a call
// that failed after waiting).
func (a *attempt) wallUsed() time.Duration {
	return time.Since(a.started) - a.queued
}

// modelContext bounds a model call by the wall-time budget left. A limited
// model is given the budget to apply once it is admitted (its wait is not
// charged); any other is given the deadline at once.
func (a *attempt) modelContext(ctx context.Context) (context.Context, context.CancelFunc, *limit.Budget) {
	if _, ok := a.model.(*limit.Model); !ok {
		ctx, cancel := a.withinWall(ctx)
		return ctx, cancel, nil
	}
	if a.work != nil {
		ctx = a.work
	}
	b := &limit.Budget{}
	if wall := a.kase.Budget.Wall.Std(); wall > 0 {
		// A budget already spent still bounds the call, at once.
		b.Remaining = max(wall-a.wallUsed(), time.Nanosecond)
	}
	ctx, cancel := context.WithCancel(limit.WithBudget(ctx, b))
	return ctx, cancel, b
}
