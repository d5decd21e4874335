package testutil

import (
	"context"
	"testing"
	"time"
)

// pollEvery is how often a wait asks its condition again: often enough
// that a test does not idle, seldom enough not to load a shared machine.
const pollEvery = 10 * time.Millisecond

// Within asks cond every few milliseconds until it holds, and fails t,
// naming what it waited for, once d has passed without it.
func Within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	Until(ctx, t, what, cond)
}

// Until asks cond every few milliseconds until it holds, and fails t,
// naming what it waited for, once ctx is done without it (the test's
// context bounds the wait).
func Until(ctx context.Context, t testing.TB, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s: %v", what, context.Cause(ctx))
		case <-tick.C:
		}
	}
}
