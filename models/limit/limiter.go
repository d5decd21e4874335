package limit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/models"
)

// Config configures a Limiter.
type Config struct {
	// Store holds the state the fleet shares. Required.
	Store Store
	// Key names the limit in Store (Key); Label is its readable name.
	Key, Label string
	// Spec is the limit. At least one of its fields must be set.
	Spec Spec
	// Holder names who holds a slot (a runner instance), for operators
	// reading the store.
	Holder string
	// Lease is how long a slot outlives its holder's last renewal: a
	// holder that dies frees its slot within it. Default DefaultLease.
	Lease time.Duration
	// Observer is told what the limiter does (nil: nobody).
	Observer Observer
	// Logger receives its warnings (nil: slog.Default()).
	Logger *slog.Logger
}

// Limiter admits the calls of one limit. Many limiters, in any number of
// processes, share a limit through their Store. It is safe for concurrent
// use.
type Limiter struct {
	cfg Config
	// poll is how often a waiter looks again when no change woke it: the
	// store's change signals are the fast path, this is the safety net.
	poll time.Duration
	now  func() time.Time
}

// New checks cfg and returns its Limiter.
func New(cfg Config) (*Limiter, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("limit: no store")
	case cfg.Key == "":
		return nil, errors.New("limit: no key")
	case cfg.Spec.MaxConcurrent < 0:
		return nil, fmt.Errorf("limit %s: max_concurrent %d is negative", cfg.Label, cfg.Spec.MaxConcurrent)
	case cfg.Spec.MaxRequestsPerMinute < 0:
		return nil, fmt.Errorf("limit %s: max_requests_per_minute %d is negative", cfg.Label, cfg.Spec.MaxRequestsPerMinute)
	case cfg.Spec.MaxConcurrent == 0 && cfg.Spec.MaxRequestsPerMinute == 0:
		return nil, fmt.Errorf("limit %s: neither max_concurrent nor max_requests_per_minute is set", cfg.Label)
	case cfg.Lease < 0:
		return nil, fmt.Errorf("limit %s: negative lease %s", cfg.Label, cfg.Lease)
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Limiter{cfg: cfg, poll: min(time.Second, cfg.Lease/4), now: time.Now}, nil
}

// Permit is an admitted call: it holds a slot (when the limit bounds
// concurrency) until Release.
type Permit struct {
	// Waited is how long Acquire waited before admitting the call.
	Waited time.Duration

	l    *Limiter
	slot Slot
	stop func()
	once sync.Once
}

// Release frees the permit's slot. Calling it again does nothing.
func (p *Permit) Release(ctx context.Context) error {
	var err error
	p.once.Do(func() {
		if p.slot == nil {
			return
		}
		p.stop()
		p.l.cfg.Observer.Held(p.l.cfg.Label, -1)
		if err = p.slot.Release(ctx); err != nil {
			err = fmt.Errorf("limit %s: release: %w", p.l.cfg.Label, err)
		}
	})
	return err
}

// Acquire waits until the limit admits a call: no pause after a throttle
// is in force, a slot under the effective concurrency is free, and a token
// of the minute's window is left. Only ctx bounds the wait.
func (l *Limiter) Acquire(ctx context.Context) (*Permit, error) {
	start := l.now()
	// The watch (a consumer on the server) is made only once a call has to
	// wait: most calls find a slot at once and need none.
	var changed <-chan struct{}
	p := &Permit{l: l}
	fail := func(err error) (*Permit, error) {
		_ = p.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("limit %s: %w", l.cfg.Label, err)
	}
	for {
		st, _, err := l.state(ctx)
		if err != nil {
			return fail(err)
		}
		if pause := st.Pause(l.now()); pause > 0 {
			if err := sleep.For(ctx, pause); err != nil {
				return fail(err)
			}
			continue
		}
		admitted, err := l.take(ctx, p, st)
		if err != nil {
			return fail(err)
		}
		if admitted {
			break
		}
		if changed == nil {
			c, stopWatch, err := l.cfg.Store.Watch(ctx, l.cfg.Key)
			if err != nil {
				return fail(fmt.Errorf("watch: %w", err))
			}
			defer stopWatch()
			changed = c
			// A release between the take and the watch is seen by
			// taking again before waiting.
			continue
		}
		t := time.NewTimer(l.poll)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fail(ctx.Err())
		}
		t.Stop()
	}
	p.Waited = l.now().Sub(start)
	l.cfg.Observer.Waited(l.cfg.Label, p.Waited)
	return p, nil
}

// take tries once to take what a call needs, a slot first (kept while the
// token is waited for: the call is next in line) and then a token.
func (l *Limiter) take(ctx context.Context, p *Permit, st State) (bool, error) {
	spec := l.cfg.Spec
	if spec.MaxConcurrent > 0 && p.slot == nil {
		n := st.Effective(spec.MaxConcurrent)
		l.cfg.Observer.Adapted(l.cfg.Label, n)
		slot, ok, err := l.cfg.Store.TakeSlot(ctx, l.cfg.Key, n, l.cfg.Holder, l.cfg.Lease)
		if err != nil || !ok {
			return false, err
		}
		p.slot, p.stop = slot, l.renew(slot)
		l.cfg.Observer.Held(l.cfg.Label, 1)
	}
	if spec.MaxRequestsPerMinute == 0 {
		return true, nil
	}
	return l.cfg.Store.TakeToken(ctx, l.cfg.Key, spec.MaxRequestsPerMinute, l.cfg.Holder)
}

// renew keeps slot's lease alive, renewing it three times a lease, until
// the returned stop is called.
func (l *Limiter) renew(slot Slot) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(l.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := slot.Renew(ctx); err != nil && ctx.Err() == nil {
					// The call goes on; the slot may be someone else's by
					// now, which costs one call over the limit, once.
					l.cfg.Logger.Warn("a model slot's lease could not be renewed", "limit", l.cfg.Label, "err", err)
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// state reads the shared adaptive state.
func (l *Limiter) state(ctx context.Context) (State, uint64, error) {
	data, rev, err := l.cfg.Store.LoadState(ctx, l.cfg.Key)
	if err != nil || data == nil {
		return State{}, rev, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		// A state nobody can read is no reason to stop calling: start over.
		l.cfg.Logger.Warn("a limit's stored state does not parse; it is reset", "limit", l.cfg.Label, "err", err)
		return State{}, rev, nil
	}
	return st, rev, nil
}

// Throttled lowers the shared limit after a provider throttled a call.
func (l *Limiter) Throttled(ctx context.Context, t models.Throttle) {
	l.cfg.Observer.Throttled(l.cfg.Label, t.Status)
	now := l.now()
	l.adapt(ctx, func(s State) State { return Throttled(s, l.ceiling(), now, t.RetryAfter) })
}

// Succeeded grows a lowered shared limit after a call succeeded.
func (l *Limiter) Succeeded(ctx context.Context) {
	l.adapt(ctx, func(s State) State { return Succeeded(s, l.ceiling()) })
}

// ceiling is the concurrency the adaptive limit may reach; without a
// concurrency limit a throttle still pauses every caller.
func (l *Limiter) ceiling() int { return max(l.cfg.Spec.MaxConcurrent, 1) }

// adapt applies f to the shared state with compare-and-set, a few times
// under contention. The state is advice: a change that loses every race
// is dropped with a warning, never an error of the call.
func (l *Limiter) adapt(ctx context.Context, f func(State) State) {
	for range 8 {
		st, rev, err := l.state(ctx)
		if err != nil {
			l.cfg.Logger.Warn("a limit's state could not be read", "limit", l.cfg.Label, "err", err)
			return
		}
		next := f(st)
		if next.Limit == st.Limit && next.PausedUntil.Equal(st.PausedUntil) {
			return
		}
		data, err := json.Marshal(next)
		if err != nil {
			return
		}
		ok, err := l.cfg.Store.SaveState(ctx, l.cfg.Key, data, rev)
		if err != nil {
			l.cfg.Logger.Warn("a limit's state could not be stored", "limit", l.cfg.Label, "err", err)
			return
		}
		if ok {
			if l.cfg.Spec.MaxConcurrent > 0 {
				l.cfg.Observer.Adapted(l.cfg.Label, next.Effective(l.cfg.Spec.MaxConcurrent))
			}
			return
		}
	}
	l.cfg.Logger.Warn("a limit's state kept changing under this runner; this change is dropped", "limit", l.cfg.Label)
}
