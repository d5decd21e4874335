package bus

import (
	"testing"
	"time"
)

// A delivery that met lagging replicas is retried over seconds, growing to
// a bound, not within the millisecond backoff of a failed handler.
func TestBehindDelayGrowsToABound(t *testing.T) {
	want := map[uint64]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 8 * time.Second, 100: 8 * time.Second}
	for n, d := range want {
		if got := behindDelay(n); got != d {
			t.Errorf("delivery %d waits %s, want %s", n, got, d)
		}
	}
}
