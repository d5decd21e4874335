package limit

import (
	"context"
	"time"
)

// Store is the state a fleet shares for its limits. Every method is one
// attempt that does not wait: the Limiter does the waiting.
type Store interface {
	// TakeSlot takes one of slots 0..n-1 of the limit key for holder,
	// leased for lease. It returns false when all n are held.
	TakeSlot(ctx context.Context, key string, n int, holder string, lease time.Duration) (Slot, bool, error)
	// TakeToken takes one of the n tokens of the limit key's one-minute
	// window: a token is freed a minute after it was taken. It returns
	// false when all n are taken.
	TakeToken(ctx context.Context, key string, n int, holder string) (bool, error)
	// LoadState returns the stored adaptive state of key (nil, 0 when
	// there is none) and its revision.
	LoadState(ctx context.Context, key string) ([]byte, uint64, error)
	// SaveState stores data as key's state if its revision is still rev
	// (0: there is none yet), and returns false if it is not.
	SaveState(ctx context.Context, key string, data []byte, rev uint64) (bool, error)
	// Watch signals on the returned channel whenever a slot, token or the
	// state of key changes (a release, an expiry), until stop is called.
	Watch(ctx context.Context, key string) (changed <-chan struct{}, stop func(), err error)
}

// Slot is one held slot of a limit.
type Slot interface {
	// Renew extends the lease from now.
	Renew(ctx context.Context) error
	// Release frees the slot.
	Release(ctx context.Context) error
}

// Observer is told what a Limiter does, for metrics. label is Label's.
type Observer interface {
	// Held is called with +1 when a slot is taken and -1 when it is freed.
	Held(label string, delta int)
	// Waited is the time a call waited before it could start.
	Waited(label string, d time.Duration)
	// Adapted is the effective concurrency after a change of it.
	Adapted(label string, limit int)
	// Throttled counts one throttled attempt by HTTP status.
	Throttled(label string, status int)
}

type noObserver struct{}

func (noObserver) Held(string, int)             {}
func (noObserver) Waited(string, time.Duration) {}
func (noObserver) Adapted(string, int)          {}
func (noObserver) Throttled(string, int)        {}
