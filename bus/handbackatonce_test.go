package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// An instance of an on-demand consumer (a runner's) stopped mid-work
// with every worker busy hands its delivery back at once, once it pulls
// no more: the nak carries no delay, and the other instance, pulling all
// along, takes the message next, only after the stopped handler returned.
// Before, the nak asked for min(ack wait, 5 s): the run waited 5 s for
// another runner although the stopped one was gone in under 1.5 s
// (docs/operations.md).
func TestAStoppedOnDemandInstanceHandsItsWorkBackAtOnce(t *testing.T) {
	if nak := stopMidWork(t, 1); nak != "-NAK" {
		t.Errorf("the stopped instance handed its delivery back with %q, want a nak with no delay", nak)
	}
}

// One with an idle worker has a pull open as it stops. nats.go's Next
// withdrew its inbox from a goroutine of its own a moment after it
// returned, and a nak the server read first was delivered into that pull
// and lost with the instance, to come back only after the ack wait (one
// stop in eight, with a hand-back at once). The bus's own pull withdraws
// it before it returns: the hand-back is at once here too, and the other
// instance takes the message as its second delivery, never a third.
func TestAStoppedInstanceWithAPullOpenDoesNotHandItsWorkBackIntoIt(t *testing.T) {
	for range 4 {
		if nak := stopMidWork(t, 2); nak != "-NAK" {
			t.Errorf("the stopped instance, with a pull open, handed its delivery back with %q, want a nak with no delay", nak)
		}
	}
}

// stopMidWork runs an on-demand consumer of workers workers on a new
// server, stops it while it handles its one message, and checks that a
// second instance, pulling all along, takes the message as its second
// delivery, after the first's handler returned, with nothing
// dead-lettered. It returns the hand-back the first sent the server.
func stopMidWork(t *testing.T, workers int) string {
	t.Helper()
	ctx := testCtx(t)
	srv := bustest.Server(t, bus.EmbeddedConfig{Durability: bus.SyncInterval})
	a := bustest.OpenWith(t, srv, bus.Config{})
	b := bustest.OpenWith(t, srv, bus.Config{})
	// What the instances answer the server, as the server receives it.
	acks := bustest.WatchAcks(t, srv, "")

	cfg := bus.ConsumerConfig{Name: "runs", Filters: []string{events.KindFilter(events.KindRunClaimed)},
		AckWait: 30 * time.Second, MaxDeliver: 5, OnDemand: true, Workers: workers}
	var aReturned atomic.Bool
	aStarted := make(chan struct{})
	aCtx, stopA := context.WithCancel(ctx)
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.Consume(aCtx, cfg, func(ctx context.Context, d bus.Delivery) error {
			close(aStarted)
			<-ctx.Done() // a run that is stopped mid-way
			aReturned.Store(true)
			return ctx.Err()
		})
	}()
	if _, err := a.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	<-aStarted

	type took struct {
		deliveries  uint64
		afterAEnded bool
	}
	bTook := make(chan took, 4)
	bCtx, stopB := context.WithCancel(ctx)
	defer stopB()
	go func() {
		_ = b.Consume(bCtx, cfg, func(ctx context.Context, d bus.Delivery) error {
			bTook <- took{d.Deliveries, aReturned.Load()}
			return nil
		})
	}()
	// B is pulling before A stops.
	bustest.Pulling(t, ctx, a, "runs", workers)

	stopA()
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	nak := acks.Naks(t, 1, 20*time.Second)[0]
	select {
	case got := <-bTook:
		if got.deliveries != 2 || !got.afterAEnded {
			t.Errorf("the other instance took the message as delivery %d (want 2), after the stopped handler returned: %v", got.deliveries, got.afterAEnded)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other instance never took the message")
	}
	if dead, _ := b.DeadLetters(ctx, "runs"); len(dead) != 0 {
		t.Errorf("%d messages dead-lettered on a clean hand-back", len(dead))
	}
	return nak
}
