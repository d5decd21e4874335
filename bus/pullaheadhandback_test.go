package bus_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// A consumer that pulls ahead (the staller's, the decider's, the meter's:
// not OnDemand), stopped while it holds one run's deliveries (one in its
// handler, the rest waiting behind it in run order, and a pull open for
// more), hands every one back unsettled and at once: each nak carries no
// delay, and a second instance, pulling all along, takes each once, after
// the stopped handler returned, as its second delivery, with nothing
// dead-lettered. A nak the server delivers into a pull the stopped
// instance still has open comes back as a third delivery at best: naks at
// once with nats.go's Fetch still pulling did that to two of the six
// (handed back again by what read the ending Fetch), and lost for the
// ack wait had nothing read it. Before, the naks asked for min(ack wait,
// 5 s), and each run waited that long for the other instance. The test
// logs how long the second instance waited (docs/operations.md): a
// measurement, not an assertion.
func TestAStoppedPullAheadInstanceHandsItsWorkBackAtOnce(t *testing.T) {
	for range 3 {
		stopPullAheadMidWork(t)
	}
}

// stopPullAheadMidWork runs the test above once, on a new server.
func stopPullAheadMidWork(t *testing.T) {
	t.Helper()
	ctx := testCtx(t)
	srv := bustest.Server(t, bus.EmbeddedConfig{Durability: bus.SyncInterval})
	a := bustest.OpenWith(t, srv, bus.Config{})
	b := bustest.OpenWith(t, srv, bus.Config{})
	// What the instances answer the server, as the server receives it.
	acks := bustest.WatchAcks(t, srv, "")
	const n = 6
	var pending []bus.Pending
	for pos := uint64(1); pos <= n; pos++ {
		pending = append(pending, bus.Pending{Fact: bustest.Claim(t, "s", "r1", pos)})
	}
	if _, err := a.Append(ctx, bus.Expect{}, pending...); err != nil {
		t.Fatal(err)
	}
	// The staller's shape: each run's facts in order, ahead of the workers.
	cfg := bus.ConsumerConfig{Name: "stalls", Filters: []string{events.KindFilter(events.KindRunClaimed)},
		AckWait: 30 * time.Second, MaxDeliver: 5, Workers: 2, Prefetch: 8, OrderByRun: true}

	var aReturned atomic.Bool
	var aHandling atomic.Int32
	aStarted := make(chan struct{})
	var once sync.Once
	aCtx, stopA := context.WithCancel(ctx)
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.Consume(aCtx, cfg, func(ctx context.Context, d bus.Delivery) error {
			aHandling.Add(1)
			once.Do(func() { close(aStarted) })
			<-ctx.Done()
			aReturned.Store(true)
			return ctx.Err()
		})
	}()
	<-aStarted
	// A holds every message before B pulls.
	testutil.Within(t, 20*time.Second, "the first instance holding every message", func() bool {
		c, err := a.JetStream().Consumer(ctx, bus.FactsStream, "stalls")
		if err != nil {
			return false
		}
		ci, err := c.Info(ctx)
		return err == nil && ci.NumAckPending == n && ci.NumPending == 0
	})

	type took struct {
		pos         uint64
		deliveries  uint64
		afterAEnded bool
		at          time.Time
	}
	bTook := make(chan took, 2*n)
	bCtx, stopB := context.WithCancel(ctx)
	defer stopB()
	go func() {
		_ = b.Consume(bCtx, cfg, func(ctx context.Context, d bus.Delivery) error {
			bTook <- took{d.Fact.Position, d.Deliveries, aReturned.Load(), time.Now()}
			return nil
		})
	}()
	bustest.Pulling(t, ctx, b, "stalls", 1)

	stopped := time.Now()
	stopA()
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	aGone := time.Since(stopped)
	for _, nak := range acks.Naks(t, n, 20*time.Second) {
		if nak != "-NAK" {
			t.Errorf("the stopped instance handed a delivery back with %q, want a nak with no delay", nak)
		}
	}
	var got []took
	for len(got) < n {
		select {
		case g := <-bTook:
			got = append(got, g)
		case <-time.After(time.Minute):
			t.Fatalf("the second instance took %d of the %d messages: %+v", len(got), n, got)
		}
	}
	// Each once, as its second delivery, after the stopped handler
	// returned. The order is not asserted: the hand-backs are naks sent
	// from the pull's queue, the by-run queue and the handler's worker, in
	// the order those stop, and the server redelivers them as it reads
	// them, not in the run's order (observed: 5, 6, 1, 3, 2, 4); it is
	// logged.
	seen := map[uint64]bool{}
	var order []uint64
	for _, g := range got {
		order = append(order, g.pos)
		if seen[g.pos] || g.pos < 1 || g.pos > n || g.deliveries != 2 || !g.afterAEnded {
			t.Errorf("the second instance took position %d (seen before: %v) as delivery %d (want 2), after the stopped handler returned: %v",
				g.pos, seen[g.pos], g.deliveries, g.afterAEnded)
		}
		seen[g.pos] = true
	}
	if dead, _ := b.DeadLetters(ctx, "stalls"); len(dead) != 0 {
		t.Errorf("%d messages dead-lettered on a clean hand-back", len(dead))
	}
	t.Logf("the stopped instance called its handler %d times for the run's %d deliveries (one at a time); the other took them in the order %v", aHandling.Load(), n, order)
	t.Logf("measured: the stopped instance returned %v after its stop; the other took the first message %v and the last %v after it",
		aGone.Round(time.Millisecond), got[0].at.Sub(stopped).Round(time.Millisecond), got[n-1].at.Sub(stopped).Round(time.Millisecond))
}
