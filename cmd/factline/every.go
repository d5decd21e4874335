package main

import (
	"context"
	"time"
)

// everyUntil calls fn every d until ctx ends or fn says to stop (returns
// false): the one loop of the command's watchers (the store, the disk,
// the progress line).
func everyUntil(ctx context.Context, d time.Duration, fn func() bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !fn() {
			return
		}
	}
}
