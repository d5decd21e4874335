package integration

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// A runner learns of cancel, steer and approve through its control watch,
// a consumer of one replica on CONTROL, which lives on one node. Kill that
// node and keep it down: a pull sent to a consumer whose node is gone is
// dropped by the cluster without an answer, so a watch that only waits
// for its pulls to expire gets empty batches for good, and a cancel sent
// afterwards never reached the run. The watch must notice and read on
// through a consumer on a live node.
func TestAControlWatchReadsOnWhenTheNodeHoldingItsConsumerDies(t *testing.T) {
	c := startNatsCluster(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := dialCluster(t, ctx, c.url())
	r := dialCluster(t, ctx, c.url())

	const suite = "deadnode"
	sigs, run, victim := watchPlacedAwayFrom(t, ctx, c, r, suite)
	send := func(id string) {
		t.Helper()
		for {
			sctx, stop := context.WithTimeout(ctx, 3*time.Second)
			err := w.Controls().Send(sctx, suite, run, events.Control{ID: id, Signal: events.SignalCancel, Reason: "test"})
			stop()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("send %s: %v", id, err)
			}
		}
	}
	await := func(id string, within time.Duration, what string) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case c, ok := <-sigs:
				if !ok {
					t.Fatalf("%s: the watch ended before signal %s", what, id)
				}
				if c.ID == id {
					return
				}
			case <-deadline:
				t.Fatalf("%s: signal %s never reached the watch within %s", what, id, within)
			}
		}
	}
	send("before")
	await("before", 30*time.Second, "before any fault")

	c.stop(victim, syscall.SIGKILL)
	killed := time.Now()
	send("after")
	defer func() { t.Logf("the watch read on %s after the kill", time.Since(killed).Round(time.Millisecond)) }()
	// The bound is the watch's: a missed heartbeat, then a consumer made
	// again (a try placed on the dead node fails after the API's bound).
	await("after", 90*time.Second, fmt.Sprintf("with %s, which held the watch's consumer, killed", victim.name))
}

// watchPlacedAwayFrom starts a control watch on b for a run of suite
// whose consumer lives on another node than the one b is connected to,
// so that killing that node costs the watch its consumer and not its
// connection. A consumer of one replica is placed on a node at random:
// the watch is made again, for another run, until it lands so.
func watchPlacedAwayFrom(t *testing.T, ctx context.Context, c *natsCluster, b *bus.Bus, suite string) (<-chan events.Control, string, *natsNode) {
	t.Helper()
	for try := 0; try < 30; try++ {
		run := fmt.Sprintf("r%d", try)
		wctx, stop := context.WithCancel(ctx)
		sigs, err := b.Controls().Watch(wctx, suite, run)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		ci, err := consumerOn(ctx, b, bus.ControlStream, events.ControlPrefix+"."+suite+"."+run+".*")
		if err != nil {
			stop()
			t.Fatal(err)
		}
		if ci.Cluster.Leader != b.Conn().ConnectedServerName() {
			t.Cleanup(stop)
			return sigs, run, c.node(t, ci.Cluster.Leader)
		}
		stop()
	}
	t.Fatal("the control watch's consumer was always placed on the node its client is connected to")
	return nil, "", nil
}

// consumerOn is the one consumer on stream filtered on filter, once it
// has a leader.
func consumerOn(ctx context.Context, b *bus.Bus, stream, filter string) (*jetstream.ConsumerInfo, error) {
	for ctx.Err() == nil {
		lctx, stop := context.WithTimeout(ctx, 5*time.Second)
		s, err := b.JetStream().Stream(lctx, stream)
		if err == nil {
			l := s.ListConsumers(lctx)
			for ci := range l.Info() {
				if ci.Config.FilterSubject == filter && ci.Cluster != nil && ci.Cluster.Leader != "" {
					stop()
					return ci, nil
				}
			}
		}
		stop()
		time.Sleep(200 * time.Millisecond)
	}
	return nil, errors.New("no consumer on " + stream + " filtered on " + filter)
}

// A run waiting for a model slot wakes on the LIMITS watch (a consumer of
// one replica, made by the key-value client) when a slot is freed. Kill
// the node that holds the watch's consumer and keep it down: a slot freed
// afterwards must still reach the watch.
func TestALimitsWatchSeesAFreedSlotWhenTheNodeHoldingItsConsumerDies(t *testing.T) {
	c := startNatsCluster(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	holder := dialCluster(t, ctx, c.url())
	waiter := dialCluster(t, ctx, c.url())

	var (
		changed <-chan struct{}
		key     string
		victim  *natsNode
	)
	for try := 0; victim == nil; try++ {
		if try == 30 {
			t.Fatal("the limits watch's consumer was always placed on the node its client is connected to")
		}
		key = fmt.Sprintf("deadnode%d", try)
		ch, stop, err := waiter.Limits().Watch(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		ci, err := consumerOn(ctx, waiter, "KV_"+bus.LimitsBucket, "$KV."+bus.LimitsBucket+"."+key+".>")
		if err != nil {
			stop()
			t.Fatal(err)
		}
		if ci.Cluster.Leader == waiter.Conn().ConnectedServerName() {
			stop()
			continue
		}
		t.Cleanup(stop)
		changed, victim = ch, c.node(t, ci.Cluster.Leader)
	}
	freeASlot := func(what string) {
		t.Helper()
		for {
			slot, ok, err := holder.Limits().TakeSlot(ctx, key, 1, "holder", time.Minute)
			if err == nil && ok {
				if err = slot.Release(ctx); err == nil {
					return
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: take and free a slot: ok=%v, %v", what, ok, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	awaitChange := func(within time.Duration, what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(within):
			t.Fatalf("%s: a slot was freed and the watch did not see it within %s", what, within)
		}
	}
	freeASlot("before any fault")
	awaitChange(30*time.Second, "before any fault")
	// Drain what taking the slot signalled besides.
	for drained := false; !drained; {
		select {
		case <-changed:
		case <-time.After(time.Second):
			drained = true
		}
	}

	c.stop(victim, syscall.SIGKILL)
	killed := time.Now()
	freeASlot("after the kill")
	awaitChange(90*time.Second, fmt.Sprintf("with %s, which held the watch's consumer, killed", victim.name))
	t.Logf("the watch saw the freed slot %s after the kill", time.Since(killed).Round(time.Millisecond))
}
