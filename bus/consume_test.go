package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// consume runs a consumer in the background until the test ends.
func consume(t *testing.T, b *bus.Bus, cfg bus.ConsumerConfig, h bus.Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Consume(ctx, cfg, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("consumer: %v", err)
		}
	})
}

// holdWork is a handler whose work lasts until its context ends, as a
// runner's long run does: it says on held that a worker holds a delivery,
// unless word of an earlier one is still unheard, then waits.
func holdWork(held chan<- struct{}) bus.Handler {
	return func(ctx context.Context, d bus.Delivery) error {
		select {
		case held <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}
}

// appendHeld appends a turn of run and waits until a holdWork worker
// holds a delivery.
func appendHeld(t *testing.T, ctx context.Context, b *bus.Bus, run string, held <-chan struct{}) {
	t.Helper()
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", run, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatalf("run %s was never handed to a worker", run)
	}
}

// stallFor derives the staller-like fact for a turn: a deterministic
// message ID makes processing the same turn twice commit it once.
func stallFor(b *bus.Bus, d bus.Delivery) bus.DecideFunc {
	return func(log bus.RunLog) ([]bus.Pending, error) {
		tc := d.Fact.Body.(events.TurnCompleted)
		f, err := events.NewFact(events.Meta{
			Suite: d.Fact.Suite, Run: d.Fact.Run, TaskGeneration: d.Fact.TaskGeneration,
			Position: log.NextPosition(), Causation: d.Fact.ID.String(),
			Producer: events.Producer{Service: events.OwnerStaller, Instance: "t"},
		}, events.StallObserved{Turn: tc.Evidence.Turn, Observation: events.StallObservation{Position: d.Fact.Position}})
		return []bus.Pending{{Fact: f, MsgID: fmt.Sprintf("%s/%d/stall", d.Fact.Run, tc.Evidence.Turn)}}, err
	}
}

// The same input processed twice (the first ack lost to a "crash") commits
// one derived fact.
func TestRedeliveryCommitsOnce(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var calls atomic.Int32
	consume(t, b, bus.ConsumerConfig{Name: "staller", Filters: []string{events.KindFilter(events.KindTurnCompleted)}, AckWait: time.Second},
		func(ctx context.Context, d bus.Delivery) error {
			if _, err := b.Commit(ctx, nil, d.Fact.Suite, d.Fact.Run, stallFor(b, d)); err != nil {
				return err
			}
			if calls.Add(1) == 1 {
				return errors.New("simulated crash after commit, before ack")
			}
			return nil
		})
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", "r1", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, 20*time.Second, "second delivery", func() bool { return calls.Load() >= 2 })
	log, err := b.LoadRun(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	stalls := 0
	for _, r := range log.Records {
		if r.Fact.Kind() == events.KindStallObserved {
			stalls++
		}
	}
	if stalls != 1 {
		t.Fatalf("%d stall.observed facts committed for one turn, want 1", stalls)
	}
}

// An undecodable message on a fact subject lands in the dead-letter stream
// with its reason, and the consumer goes on to the next fact.
func TestUndecodableGoesToDeadLetters(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var mu sync.Mutex
	var seen []uint64
	consume(t, b, bus.ConsumerConfig{Name: "watcher", Filters: []string{"fact.>"}},
		func(ctx context.Context, d bus.Delivery) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, d.Fact.Position)
			return nil
		})
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "fact.s.r1.turn.completed", Data: []byte{0xc1, 0x00}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "fact.s.r1.bogus.kind", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	// A valid fact on another run's subject: its body and its subject disagree.
	stray, _ := events.Encode(bustest.Claim(t, "s", "r9", 1))
	if _, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "fact.s.r1.run.claimed", Data: stray}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r2", 1)}); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, 20*time.Second, "the good fact", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 })
	var dead []bus.DeadLetter
	testutil.Within(t, 20*time.Second, "three dead letters", func() bool {
		var err error
		dead, err = b.DeadLetters(ctx, "watcher")
		return err == nil && len(dead) == 3
	})
	for i, d := range dead {
		want := "undecodable fact"
		if i == 2 {
			want = "does not match its subject fact.s.r1.run.claimed"
		}
		if !strings.Contains(d.Reason, want) || d.Consumer != "watcher" || d.Stream != bus.FactsStream || d.StreamSeq == 0 {
			t.Fatalf("dead letter %d lacks detail (want %q): %+v", i, want, d)
		}
	}
	if dead[0].Subject != "fact.s.r1.turn.completed" || string(dead[1].Data) != "x" {
		t.Fatalf("dead letters do not keep the original: %+v", dead)
	}
}

// A handler that keeps failing has its message dead-lettered after
// MaxDeliver tries, with the last error as reason; a permanent error goes
// there at once.
func TestFailingHandlerDeadLetters(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var tries atomic.Int32
	consume(t, b, bus.ConsumerConfig{Name: "flaky", Filters: []string{"fact.*.*.run.claimed"}, MaxDeliver: 3},
		func(ctx context.Context, d bus.Delivery) error {
			if d.Fact.Run == "perm" {
				return bus.Permanent(errors.New("case file is invalid"))
			}
			tries.Add(1)
			return errors.New("model endpoint down")
		})
	for _, run := range []string{"flaky", "perm"} {
		if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", run, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	var dead []bus.DeadLetter
	testutil.Within(t, 20*time.Second, "dead letters", func() bool {
		var err error
		dead, err = b.DeadLetters(ctx, "flaky")
		return err == nil && len(dead) == 2
	})
	reasons := dead[0].Reason + " | " + dead[1].Reason
	if !strings.Contains(reasons, "failed 3 times, last: model endpoint down") || !strings.Contains(reasons, "case file is invalid") {
		t.Fatalf("reasons = %q", reasons)
	}
	if n := tries.Load(); n != 3 {
		t.Fatalf("failing message tried %d times, want 3", n)
	}
}

// A handler that runs longer than AckWait is kept alive by progress
// heartbeats and is not redelivered meanwhile.
func TestLongHandlerIsNotRedelivered(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var deliveries atomic.Int32
	var finished atomic.Bool
	consume(t, b, bus.ConsumerConfig{Name: "slow", Filters: []string{"fact.>"}, AckWait: 300 * time.Millisecond, Workers: 2},
		func(ctx context.Context, d bus.Delivery) error {
			deliveries.Add(1)
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
			finished.Store(true)
			return nil
		})
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, 20*time.Second, "handler to finish", finished.Load)
	if n := deliveries.Load(); n != 1 {
		t.Fatalf("delivered %d times, want 1", n)
	}
}

// A handler that says another delivery holds the message neither acks it
// (the message stays pending, for its ack wait to bring back) nor hands it
// back (no redelivery comes while the other delivery may be working), and
// writes no dead letter.
func TestHeldElsewhereLeavesTheMessagePending(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var calls, returned atomic.Int32
	consume(t, b, bus.ConsumerConfig{Name: "runner", Filters: []string{events.KindFilter(events.KindTurnCompleted)}, AckWait: 30 * time.Second},
		func(ctx context.Context, d bus.Delivery) error {
			calls.Add(1)
			defer returned.Add(1)
			return fmt.Errorf("lost the lease: %w", bus.ErrHeldElsewhere)
		})
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", "r1", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, 20*time.Second, "the handler", func() bool { return returned.Load() >= 1 })
	// A nak, even with the handler backoff, would be redelivered well
	// within this window.
	time.Sleep(500 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("the message was delivered %d times, want once (left to the other delivery)", n)
	}
	c, err := b.JetStream().Consumer(ctx, bus.FactsStream, "runner")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 1 {
		t.Fatalf("%d messages pending an ack, want 1 (not acknowledged)", info.NumAckPending)
	}
	dead, err := b.JetStream().Stream(ctx, bus.DeadStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := dead.CachedInfo().State.Msgs; n != 0 {
		t.Fatalf("%d dead letters, want none", n)
	}
}

// An on-demand consumer takes a message only when a worker is free: behind
// a handler that runs for several ack waits, the next message is not
// delivered (and so not redelivered, burning its tries) before a worker
// takes it.
func TestOnDemandTakesOnlyWhatAWorkerCanHandle(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var mu sync.Mutex
	deliveries := map[string]uint64{}
	consume(t, b, bus.ConsumerConfig{Name: "runner", Filters: []string{events.KindFilter(events.KindTurnCompleted)},
		AckWait: time.Second, Workers: 1, OnDemand: true},
		func(ctx context.Context, d bus.Delivery) error {
			mu.Lock()
			deliveries[d.Fact.Run] = max(deliveries[d.Fact.Run], d.Deliveries)
			mu.Unlock()
			if d.Fact.Run == "long" {
				time.Sleep(3500 * time.Millisecond) // three ack waits, kept alive by heartbeats
			}
			return nil
		})
	for _, run := range []string{"long", "next"} {
		if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", run, 1, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Within(t, 20*time.Second, "both messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(deliveries) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if deliveries["long"] != 1 || deliveries["next"] != 1 {
		t.Fatalf("deliveries %v, want each message delivered once", deliveries)
	}
}
