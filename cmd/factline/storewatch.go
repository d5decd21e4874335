package main

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/factline/factline/bus"
)

// storeIdle is how long a followed suite may go without a new fact before
// its follower asks whether the store still takes writes. A full store
// shows only to a writer, and the follower writes nothing otherwise: the
// services that hit it hold their work and wait.
const storeIdle = 2 * time.Second

// watchStore stops a suite's follower (stop, with the cause) when the
// store is full: two write probes in a row, storeIdle apart and after
// storeIdle without a fact, refused for want of space, or left
// unacknowledged by a server that answers (a full disk). Other failures
// (a server restarting) are ridden out.
func watchStore(ctx context.Context, b *bus.Bus, lastFact *atomic.Int64, stop context.CancelCauseFunc) {
	refused := 0
	everyUntil(ctx, storeIdle, func() bool {
		if time.Since(time.Unix(0, lastFact.Load())) < storeIdle {
			refused = 0
			return true
		}
		err := b.CheckWritable(ctx)
		if !errors.Is(err, bus.ErrStoreFull) && !errors.Is(err, bus.ErrNotStoring) {
			refused = 0
			return true
		}
		if refused++; refused >= 2 {
			stop(err)
			return false
		}
		return true
	})
}
