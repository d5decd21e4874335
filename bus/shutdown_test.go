package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// A consumer stopped while it holds deliveries hands them back without
// burning their delivery count: the next instance gets every message, and
// none is dropped or dead-lettered.
func TestShutdownHandsWorkBack(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	for i := range 5 {
		if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r"+string(rune('a'+i)), 1)}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := bus.ConsumerConfig{Name: "worker", Filters: []string{events.KindFilter(events.KindRunClaimed)}, AckWait: 2 * time.Second, Prefetch: 4, MaxDeliver: 3}
	first, stop := context.WithCancel(ctx)
	started := make(chan struct{}, 8)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(first, cfg, func(ctx context.Context, d bus.Delivery) error {
			started <- struct{}{}
			<-ctx.Done() // never finishes: it is stopped mid-work
			return ctx.Err()
		})
	}()
	<-started
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	second, stop2 := context.WithCancel(ctx)
	defer stop2()
	go func() {
		_ = b.Consume(second, cfg, func(ctx context.Context, d bus.Delivery) error { handled.Add(1); return nil })
	}()
	testutil.Within(t, 20*time.Second, "every message handled by the next instance", func() bool { return handled.Load() == 5 })
	if dead, _ := b.DeadLetters(ctx, "worker"); len(dead) != 0 {
		t.Fatalf("%d messages dead-lettered on a clean shutdown", len(dead))
	}
}
