package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// Every instance of a service shares one durable consumer, whose ack wait
// the server applies to all of them, while each instance heartbeats its
// deliveries every third of its own. An instance started with a shorter
// --ack-wait used to set the consumer's under the running ones: their
// heartbeats then came too late, and their runs were redelivered, taken
// over and given up (seen on a fleet: a runner at 3s beside two at 30s
// ended a 14 s run errored, "delivered 6 times"). It is refused while
// others work, naming both; once they have stopped it may change it. A
// longer one is safe for them, and taken.
func TestAnotherAckWaitIsRefusedWhileOtherInstancesWork(t *testing.T) {
	// Parallel: it mostly waits (ack waits of seconds to pass) on a server
	// of its own.
	t.Parallel()
	ctx := testCtx(t)
	b, srv := bustest.Start(t)
	filters := []string{events.KindFilter(events.KindTurnCompleted)}
	held := make(chan struct{})
	first, stopFirst := context.WithCancel(ctx)
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- b.Consume(first, bus.ConsumerConfig{Name: "runner", Filters: filters, AckWait: 6 * time.Second, Workers: 2, OnDemand: true},
			holdWork(held)) // a long run, kept alive by heartbeats
	}()
	appendHeld(t, ctx, b, "r1", held)

	other := bustest.OpenWith(t, srv, bus.Config{})
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := other.Consume(octx, bus.ConsumerConfig{Name: "runner", Filters: filters, AckWait: 2 * time.Second, OnDemand: true},
		func(context.Context, bus.Delivery) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "ack wait") || !strings.Contains(err.Error(), "ack wait 6s") || !strings.Contains(err.Error(), "ack wait 2s") {
		t.Fatalf("an instance with another ack wait beside a working one: %v", err)
	}
	ackWait := func() time.Duration {
		c, err := b.JetStream().Consumer(ctx, bus.FactsStream, "runner")
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo().Config.AckWait
	}
	if w := ackWait(); w != 6*time.Second {
		t.Fatalf("the consumer's ack wait is %s after the refusal, want the working instances' 6s", w)
	}
	// A longer one is safe for them (their heartbeats come sooner than
	// needed): a process attached to a store joins with the default.
	longer, stopLonger := context.WithCancel(ctx)
	longerDone := make(chan error, 1)
	go func() {
		longerDone <- other.Consume(longer, bus.ConsumerConfig{Name: "runner", Filters: filters, AckWait: 9 * time.Second, OnDemand: true},
			func(context.Context, bus.Delivery) error { return nil })
	}()
	testutil.Within(t, 20*time.Second, "a longer ack wait to be taken", func() bool { return ackWait() == 9*time.Second })
	stopLonger()
	if err := <-longerDone; err != nil {
		t.Fatalf("an instance with a longer ack wait: %v", err)
	}

	stopFirst()
	if err := <-firstDone; err != nil {
		t.Fatalf("first instance: %v", err)
	}
	// With nobody working on it, a new ack wait is the operator's change,
	// once the last delivery is an ack wait old: the one the first
	// instance handed back stays unacknowledged until someone pulls it.
	later, stopLater := context.WithCancel(ctx)
	defer stopLater()
	testutil.Within(t, 40*time.Second, "the ack wait to change once the others stopped", func() bool {
		changed := make(chan error, 1)
		go func() {
			changed <- other.Consume(later, bus.ConsumerConfig{Name: "runner", Filters: filters, AckWait: 2 * time.Second, OnDemand: true},
				func(context.Context, bus.Delivery) error { return nil })
		}()
		select {
		case <-changed: // refused: still an ack wait of the first's
			time.Sleep(500 * time.Millisecond)
			return false
		case <-time.After(2 * time.Second):
		}
		return ackWait() == 2*time.Second
	})
}
