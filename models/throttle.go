package models

import (
	"context"
	"time"
)

// Throttle is one answer of a provider that asked the caller to slow down:
// HTTP 429 (rate limited) or 503 (overloaded), with the wait it asked for
// (zero when it named none).
type Throttle struct {
	Status     int
	RetryAfter time.Duration
}

type throttleKey struct{}

// WithThrottleHook returns ctx carrying fn, which a provider calls (through
// ReportThrottle) for every throttled attempt of a call, retried or not.
// It is how a limiter shared by a fleet learns that a provider is
// overloaded while the provider's own client is still retrying.
func WithThrottleHook(ctx context.Context, fn func(Throttle)) context.Context {
	return context.WithValue(ctx, throttleKey{}, fn)
}

// ReportThrottle tells the hook ctx carries, if any, of a throttled attempt.
func ReportThrottle(ctx context.Context, t Throttle) {
	if fn, ok := ctx.Value(throttleKey{}).(func(Throttle)); ok && fn != nil {
		fn(t)
	}
}
