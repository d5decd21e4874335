package stall

import "testing"

func TestVolatileTokensAreReplacedAndProgressIsKept(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"12:00:01 status: waiting", "12:00:07 status: waiting"},
		{"2026-12-01T03:04:05Z job queued", "2026-12-01T03:09:55.123+01:00 job queued"},
		{"built on 2026-11-30", "built on 2026-12-01"},
		{"elapsed 1.5s, still running", "elapsed 2m3s, still running"},
		{"waiting for pid 4242", "waiting for pid 4711"},
		{"lock held by /tmp/job-8xk2/lock", "lock held by /tmp/job-q93a/lock"},
		{"request 3f9a1c2e77b0 pending", "request 9be07a11c4d2 pending"},
		{"trace 123e4567-e89b-12d3-a456-426614174000", "trace 00000000-e89b-12d3-a456-426614174999"},
	} {
		if stable(tc.a) != stable(tc.b) {
			t.Errorf("%q and %q differ only in volatile tokens: %q vs %q", tc.a, tc.b, stable(tc.a), stable(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"running 30%", "running 40%"},
		{"3 of 10 done", "4 of 10 done"},
		{"status: waiting", "status: done"},
		{"exit 1", "exit 2"},
	} {
		if stable(tc.a) == stable(tc.b) {
			t.Errorf("%q and %q say different things, but compare equal as %q", tc.a, tc.b, stable(tc.a))
		}
	}
}
