package runner

import (
	"context"
	"testing"
)

// SetBeforeClaim makes s call f just before each attempt commits its claim,
// so that a test can settle work as another attempt would in that window.
// Only one Service at a time may have such a hook; it is removed when t
// ends.
func SetBeforeClaim(t testing.TB, s *Service, f func(ctx context.Context, suite, run string)) {
	t.Helper()
	hook := func(at *Service, ctx context.Context, suite, run string) {
		if at == s {
			f(ctx, suite, run)
		}
	}
	if !beforeClaimHook.CompareAndSwap(nil, &hook) {
		t.Fatal("another test's before-claim hook is still set")
	}
	t.Cleanup(func() { beforeClaimHook.Store(nil) })
}

// SetAfterLoop makes s call f when an attempt's loop returns, with how many
// facts the attempt's standing folded in all and how many the run's log
// held at its last look. Only one Service at a time may have such a hook;
// it is removed when t ends.
func SetAfterLoop(t testing.TB, s *Service, f func(run string, folded int64, facts int)) {
	t.Helper()
	hook := func(at *Service, run string, folded int64, facts int) {
		if at == s {
			f(run, folded, facts)
		}
	}
	if !afterLoopHook.CompareAndSwap(nil, &hook) {
		t.Fatal("another test's after-loop hook is still set")
	}
	t.Cleanup(func() { afterLoopHook.Store(nil) })
}
