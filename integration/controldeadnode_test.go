package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// The dead-node tests (these four and the two of followdeadnode_test.go)
// run in parallel: each has a cluster of nats-server processes of its
// own, on ports and stores of its own, and strikes only its own nodes.
// Most of their time is spent waiting (the cluster's election, consumer
// placement, and from 15 to 45 s for the client's heartbeats to say a
// consumer is gone), not working: the servers run outside the race-built
// test binary. Serial, they held integration's one busy core idle for
// about three minutes of make test.

// A runner learns of cancel, steer and approve through its control watch,
// a consumer of one replica on CONTROL, which lives on one node. Kill that
// node and keep it down: a cancel sent afterwards must still reach the
// run. It does, and this guards it: the killed node's routes close at
// once, so the next pull to its consumer is answered "no responders", and
// the watch makes another consumer on a live node.
func TestAControlWatchReadsOnWhenTheNodeHoldingItsConsumerDies(t *testing.T) {
	t.Parallel() // it mostly waits; see the top of controldeadnode_test.go
	controlWatchAcrossAFault(t, "killed", func(c *natsCluster, n *natsNode) { c.stop(n, syscall.SIGKILL) })
}

// The same with the node frozen (SIGSTOP: a hung machine, a partition
// that sends no reset) rather than killed: its routes stay up until the
// cluster's pings go unanswered, minutes later, so a pull sent to the
// consumer on it goes there and is never answered, and a watch that only
// waits for its pulls to expire reads empty batches all that while.
func TestAControlWatchReadsOnWhenTheNodeHoldingItsConsumerFreezes(t *testing.T) {
	t.Parallel() // it mostly waits; see the top of controldeadnode_test.go
	controlWatchAcrossAFault(t, "frozen", func(c *natsCluster, n *natsNode) { c.freeze(t, n) })
}

// controlWatchAcrossAFault watches a run's controls through a consumer on
// one node, strikes that node with fault, sends a cancel and wants it
// delivered.
func controlWatchAcrossAFault(t *testing.T, what string, fault func(*natsCluster, *natsNode)) {
	c := startNatsCluster(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := dialCluster(t, ctx, c.url())

	const suite = "deadnode"
	sigs, run, victim := watchPlacedAwayFrom(t, ctx, c, r, suite)
	// The sender is a client of a node the fault spares: a client of a
	// frozen node would not know for minutes that it has to go elsewhere.
	w := dialCluster(t, ctx, c.urlWithout(victim))
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

	fault(c, victim)
	struck := time.Now()
	send("after")
	// The bound is the watch's: a pull unanswered past its heartbeats, then
	// a consumer made again (a try placed on the struck node fails after
	// the API's bound).
	await("after", 90*time.Second, fmt.Sprintf("with %s, which held the watch's consumer, %s", victim.name, what))
	t.Logf("the watch read on %s after %s was %s", time.Since(struck).Round(time.Millisecond), victim.name, what)
}

// urlWithout lists every node but n.
func (c *natsCluster) urlWithout(n *natsNode) string {
	var out []string
	for _, o := range c.nodes {
		if o != n {
			out = append(out, fmt.Sprintf("nats://127.0.0.1:%d", o.client))
		}
	}
	return strings.Join(out, ",")
}

// freeze stops n's process with SIGSTOP, as a hung machine: its sockets
// stay open and nothing answers. It is thawed (SIGCONT) at the test's
// end, before the cluster is stopped.
func (c *natsCluster) freeze(t *testing.T, n *natsNode) {
	t.Helper()
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil {
		t.Fatalf("freeze %s: it is not running", n.name)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("freeze %s: %v", n.name, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGCONT) })
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
// afterwards must still reach the watch. It does, and this guards it: the
// key-value client's watch expects the server's heartbeats and makes its
// consumer again when they stop. (The limiter also looks again every
// second or less whatever the watch says: models/limit.Limiter.poll.)
func TestALimitsWatchSeesAFreedSlotWhenTheNodeHoldingItsConsumerDies(t *testing.T) {
	t.Parallel() // it mostly waits; see the top of controldeadnode_test.go
	limitsWatchAcrossAFault(t, "killed", func(c *natsCluster, n *natsNode) { c.stop(n, syscall.SIGKILL) })
}

// The same with the node frozen rather than killed (see
// TestAControlWatchReadsOnWhenTheNodeHoldingItsConsumerFreezes).
func TestALimitsWatchSeesAFreedSlotWhenTheNodeHoldingItsConsumerFreezes(t *testing.T) {
	t.Parallel() // it mostly waits; see the top of controldeadnode_test.go
	limitsWatchAcrossAFault(t, "frozen", func(c *natsCluster, n *natsNode) { c.freeze(t, n) })
}

// limitsWatchAcrossAFault watches a limit's keys through a consumer on
// one node, strikes that node with fault, frees a slot and wants the
// watch to see it.
func limitsWatchAcrossAFault(t *testing.T, what string, fault func(*natsCluster, *natsNode)) {
	c := startNatsCluster(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
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
	// The holder is a client of a node the fault spares.
	holder := dialCluster(t, ctx, c.urlWithout(victim))
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

	fault(c, victim)
	struck := time.Now()
	freeASlot("after the fault")
	awaitChange(90*time.Second, fmt.Sprintf("with %s, which held the watch's consumer, %s", victim.name, what))
	t.Logf("the watch saw the freed slot %s after %s was %s", time.Since(struck).Round(time.Millisecond), victim.name, what)
}
