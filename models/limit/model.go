package limit

import (
	"context"
	"fmt"
	"time"

	"github.com/factline/factline/models"
)

// Model is a models.Model whose calls each hold a permit of a Limiter
// while they run.
type Model struct {
	inner models.Model
	lim   *Limiter
}

var _ models.Model = (*Model)(nil)

// Wrap returns inner admitted by l.
func Wrap(inner models.Model, l *Limiter) *Model { return &Model{inner: inner, lim: l} }

// Provider is the inner model's.
func (m *Model) Provider() string { return m.inner.Provider() }

// Render is the inner model's: a limit changes when a request is sent,
// never what is sent.
func (m *Model) Render(req models.Request) ([]byte, error) { return m.inner.Render(req) }

// Reserve is the inner model's.
func (m *Model) Reserve(req models.Request) uint64 { return m.inner.Reserve(req) }

// Exhausted forwards the inner model's answer, when it has one (a script
// with no turn left).
func (m *Model) Exhausted(turn int) bool {
	ex, ok := m.inner.(interface{ Exhausted(turn int) bool })
	return ok && ex.Exhausted(turn)
}

// Complete waits for a permit, calls the inner model within the budget
// ctx carries (WithBudget) counted from the moment the permit is given,
// tells the limiter of every throttled attempt and of a success, and
// releases the permit. The reply's QueueWait is the wait.
func (m *Model) Complete(ctx context.Context, req models.Request) (models.Reply, error) {
	p, err := m.lim.Acquire(ctx)
	if err != nil {
		return models.Reply{}, fmt.Errorf("waiting for a model slot: %w", err)
	}
	defer func() { _ = p.Release(context.WithoutCancel(ctx)) }()
	call := models.WithThrottleHook(ctx, func(t models.Throttle) { m.lim.Throttled(ctx, t) })
	if b, ok := ctx.Value(budgetKey{}).(*Budget); ok {
		b.Waited = p.Waited
		if b.Remaining > 0 {
			var cancel context.CancelFunc
			call, cancel = context.WithTimeout(call, b.Remaining)
			defer cancel()
		}
	}
	reply, err := m.inner.Complete(call, req)
	if err == nil {
		m.lim.Succeeded(ctx)
		reply.QueueWait = p.Waited
	}
	return reply, err
}

// Budget is the time a call may take, not counting its wait for a permit.
type Budget struct {
	// Remaining bounds the call once admitted (0: no bound).
	Remaining time.Duration
	// Waited is set by Model.Complete to the wait, also when the call
	// then fails.
	Waited time.Duration
}

type budgetKey struct{}

// WithBudget returns ctx carrying b for Model.Complete.
func WithBudget(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}
