// Package sleep is the one context-aware pause: a retry's backoff, a
// poll's interval, a scripted model's delay all wait this way, so that a
// cancelled caller never sleeps on.
package sleep

import (
	"context"
	"time"
)

// For waits d, or until ctx ends, whichever comes first. It returns
// ctx.Err() when ctx has ended, also when it had already ended before the
// call (for any d, 0 included), and nil otherwise.
func For(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
