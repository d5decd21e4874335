package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
)

// A reader following the log (factline run --nats waiting for its report,
// tail, the viewer) keeps its place through an ordered consumer of one
// replica, which lives on one node. Kill that node and keep it down, as
// the compose fleet's fault test does: the follower must read on from
// the other two. nats.go recreates the consumer under one name until it
// succeeds; the first try is placed on the dead node before the cluster
// knows it is gone, and every later try updates that placement, so the
// follower waited for the node to come back, for ever where it did not.
func TestAFollowerReadsOnWhenTheNodeHoldingItsConsumerDies(t *testing.T) {
	t.Parallel() // it mostly waits; see the top of controldeadnode_test.go
	c := startNatsCluster(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := dialCluster(t, ctx, c.url())
	r := dialCluster(t, ctx, c.url())

	const filter = "fact.follow.>"
	var seen atomic.Uint64
	go func() {
		var from uint64
		for ctx.Err() == nil {
			_, _ = r.Read(ctx, bus.ReadOptions{Filter: filter, Follow: true, FromSeq: from}, func(raw bus.Raw) error {
				seen.Store(raw.Seq)
				from = raw.Seq + 1
				return nil
			})
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	publish := func(n int) uint64 {
		t.Helper()
		return publishUntilAcked(ctx, t, w.JetStream(), "follow", n)
	}
	awaitSeen := func(want uint64, what string) {
		t.Helper()
		for seen.Load() < want {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the follower read up to sequence %d of %d and no further", what, seen.Load(), want)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	awaitSeen(publish(1), "before any fault")

	first, err := followerConsumer(ctx, w, filter)
	if err != nil {
		t.Fatal(err)
	}
	victim := c.node(t, first.Cluster.Leader)
	// nats.go recreates a lost ordered consumer as <prefix>_<serial+1>. In
	// the wild that name is placed on the dead node by chance (the cluster
	// marks a killed node offline only minutes later); here it is placed
	// there beforehand, with the settings nats.go gives it, so that the
	// fault is the same on every run.
	next := nextOrderedName(t, first.Name)
	placeOn(t, ctx, w, victim.name, jetstream.ConsumerConfig{
		Name: next, FilterSubject: filter, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seen.Load() + 1,
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 30 * time.Second, Replicas: 1, MemoryStorage: true,
	})
	c.stop(victim, syscall.SIGKILL)
	awaitSeen(publish(5), fmt.Sprintf("with %s, which held the follower's consumer and its next name, killed", victim.name))
}

// node is the cluster's node named name.
func (c *natsCluster) node(t *testing.T, name string) *natsNode {
	t.Helper()
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	t.Fatalf("%q is not a node of the cluster", name)
	return nil
}

// nextOrderedName is the name nats.go gives an ordered consumer named
// name (<prefix>_<serial>) when it recreates it.
func nextOrderedName(t *testing.T, name string) string {
	t.Helper()
	i := strings.LastIndexByte(name, '_')
	serial, err := strconv.Atoi(name[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("ordered consumer %q is not named <prefix>_<serial>", name)
	}
	return fmt.Sprintf("%s_%d", name[:i], serial+1)
}

// placeOn creates the consumer cfg on FACTS until the cluster places it
// on node (a consumer of one replica goes to a node chosen at random).
func placeOn(t *testing.T, ctx context.Context, b *bus.Bus, node string, cfg jetstream.ConsumerConfig) {
	t.Helper()
	js := b.JetStream()
	for try := 0; try < 60; try++ {
		cctx, stop := context.WithTimeout(ctx, 5*time.Second)
		cons, err := js.CreateConsumer(cctx, bus.FactsStream, cfg)
		if err == nil {
			if ci := cons.CachedInfo(); ci.Cluster != nil && ci.Cluster.Leader == node {
				stop()
				return
			}
			_ = js.DeleteConsumer(cctx, bus.FactsStream, cfg.Name)
		}
		stop()
	}
	t.Fatalf("consumer %s was never placed on %s", cfg.Name, node)
}

// followerConsumer is the one consumer on FACTS filtered on filter, once
// it has a leader.
func followerConsumer(ctx context.Context, b *bus.Bus, filter string) (*jetstream.ConsumerInfo, error) {
	return consumerOn(ctx, b, bus.FactsStream, filter)
}

// The same with the node frozen (SIGSTOP) rather than killed: its routes
// stay up until the cluster's pings go unanswered, minutes later, so
// nothing tells the follower its consumer is gone but the heartbeats it
// stops getting. The follower is a client of another node, as is the
// writer: a client of the frozen node would itself wait minutes to learn
// it must go elsewhere, which is no matter of the consumer.
func TestAFollowerReadsOnWhenTheNodeHoldingItsConsumerFreezes(t *testing.T) {
	t.Parallel() // it mostly waits; see the top of controldeadnode_test.go
	c := startNatsCluster(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admin := dialCluster(t, ctx, c.url())
	home := c.nodes[0]
	var r *bus.Bus

	const filter = "fact.freeze.>"
	var seen atomic.Uint64
	follow := func(ctx context.Context) {
		var from uint64
		for ctx.Err() == nil {
			_, _ = r.Read(ctx, bus.ReadOptions{Filter: filter, Follow: true, FromSeq: from}, func(raw bus.Raw) error {
				seen.Store(raw.Seq)
				from = raw.Seq + 1
				return nil
			})
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	// The follower's consumer is placed at random among the peers the
	// meta leader counts caught up, which under load may be one node
	// every time: it is made again, from a client of the next node each
	// time, until it lives on another node than the follower's client.
	var first *jetstream.ConsumerInfo
	for try := 0; first == nil; try++ {
		if try == 30 {
			t.Fatal("the follower's consumer was always placed on the node its client is connected to")
		}
		home = c.nodes[try%len(c.nodes)]
		r = dialCluster(t, ctx, fmt.Sprintf("nats://127.0.0.1:%d", home.client))
		fctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); follow(fctx) }()
		ci, err := followerConsumer(ctx, admin, filter)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		if ci.Cluster.Leader != home.name {
			t.Cleanup(func() { stop(); <-done })
			first = ci
			break
		}
		stop()
		<-done
	}
	victim := c.node(t, first.Cluster.Leader)
	w := dialCluster(t, ctx, c.urlWithout(victim))
	publish := func(n int) uint64 {
		t.Helper()
		return publishUntilAcked(ctx, t, w.JetStream(), "freeze", n)
	}
	awaitSeen := func(want uint64, within time.Duration, what string) {
		t.Helper()
		deadline := time.After(within)
		for seen.Load() < want {
			select {
			case <-deadline:
				t.Fatalf("%s: the follower read up to sequence %d of %d and no further within %s", what, seen.Load(), want, within)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	awaitSeen(publish(1), 30*time.Second, "before any fault")
	next := nextOrderedName(t, first.Name)
	placeOn(t, ctx, w, victim.name, jetstream.ConsumerConfig{
		Name: next, FilterSubject: filter, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seen.Load() + 1,
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 30 * time.Second, Replicas: 1, MemoryStorage: true,
	})
	c.freeze(t, victim)
	frozen := time.Now()
	awaitSeen(publish(5), 2*time.Minute, fmt.Sprintf("with %s, which held the follower's consumer and its next name, frozen", victim.name))
	t.Logf("the follower read on %s after %s was frozen", time.Since(frozen).Round(time.Millisecond), victim.name)
}

// publishUntilAcked publishes n messages on fact.<suite>.r<i>.run.requested,
// each tried again until the cluster acknowledges it (a node is down or
// frozen meanwhile), and returns the last one's sequence.
func publishUntilAcked(ctx context.Context, t *testing.T, js jetstream.JetStream, suite string, n int) uint64 {
	t.Helper()
	var seq uint64
	for i := range n {
		for {
			pctx, stop := context.WithTimeout(ctx, 3*time.Second)
			ack, err := js.PublishMsg(pctx, &nats.Msg{Subject: fmt.Sprintf("fact.%s.r%d.run.requested", suite, i), Data: []byte{0x90}})
			stop()
			if err == nil {
				seq = ack.Sequence
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("publish: %v", err)
			}
		}
	}
	return seq
}
