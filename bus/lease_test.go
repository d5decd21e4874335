package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// An instance whose handler failed because the bus did (its connection
// froze) retries the handler in place, for as long as its delivery is its
// own. Once the ack wait passed without a confirmed heartbeat the server
// may have handed the message to another instance, and here it did: the
// first instance, its connection back, must give the delivery up, not run
// the handler again on work the other now holds.
func TestInPlaceRetryLeavesADeliveryAnotherInstanceTook(t *testing.T) {
	ctx := testCtx(t)
	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	fz := bustest.StartFreezer(t, srv.ClientURL())
	frozenBus, err := bus.Dial(ctx, fz.URL(), bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(frozenBus.Conn().Close)
	cfg := bus.ConsumerConfig{Name: "leased", Filters: []string{events.KindFilter(events.KindRunClaimed)},
		AckWait: 2 * time.Second, MaxDeliver: 5, OnDemand: true}

	var mu sync.Mutex
	var first, after []uint64 // the frozen instance's calls, before and after the other took the message
	var seen []uint64         // every delivery either instance got
	taken := make(chan struct{})
	consume(t, frozenBus, cfg, func(ctx context.Context, d bus.Delivery) error {
		mu.Lock()
		select {
		case <-taken:
			after = append(after, d.Deliveries)
		default:
			first = append(first, d.Deliveries)
		}
		seen = append(seen, d.Deliveries)
		n := len(first)
		mu.Unlock()
		if n == 1 {
			fz.Freeze()
			select {
			case <-taken:
			case <-ctx.Done():
			}
		}
		return fmt.Errorf("append: %w", nats.ErrTimeout)
	})
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, 20*time.Second, "the frozen instance's delivery", func() bool { mu.Lock(); defer mu.Unlock(); return len(first) > 0 })
	done := make(chan struct{})
	consume(t, b, cfg, func(ctx context.Context, d bus.Delivery) error {
		mu.Lock()
		seen = append(seen, d.Deliveries)
		mu.Unlock()
		select {
		case <-taken:
			return nil
		default:
		}
		close(taken)
		fz.Thaw()
		// Hold the message a while, heartbeats and all: the frozen
		// instance, its connection back, has time to touch it.
		select {
		case <-time.After(2 * cfg.AckWait):
		case <-ctx.Done():
		}
		close(done)
		return nil
	})
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the other instance never got the message")
	}
	testutil.Within(t, 20*time.Second, "the message to be acknowledged", func() bool { return ackPending(t, ctx, b, cfg.Name) == 0 })
	mu.Lock()
	defer mu.Unlock()
	if len(after) > 0 {
		t.Fatalf("the instance whose lease lapsed ran the handler again %d times after another instance took the message (deliveries %v)", len(after), seen)
	}
	if len(seen) != 2 {
		t.Fatalf("deliveries %v, want the frozen instance's and the other's, nothing more", seen)
	}
}
