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
