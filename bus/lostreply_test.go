package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// freezer is a loopback proxy in front of a server that can stop passing
// the server's bytes to the client while keeping the connection open:
// every answer is lost, as when a stream leader dies after taking a
// request, and nothing tells the client.
type freezer struct{ p *bustest.Proxy }

func (f freezer) freeze() { f.p.LoseAnswers() }

// behindFreezer starts a server on loopback and a bus connected to it
// through a freezer, with a caller's deadline far beyond any bound under
// test.
func behindFreezer(t *testing.T) (*bus.Bus, freezer, context.Context) {
	t.Helper()
	_, srv := bustest.StartWith(t, bus.EmbeddedConfig{Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	fz := freezer{bustest.StartProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b, err := bus.Dial(ctx, fz.p.URL(), bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Conn().Close)
	return b, fz, ctx
}

// A blob read whose answers are lost fails within its own bound even when
// the caller's deadline is far off: a runner preparing a workspace must not
// keep its run (and the delivery it heartbeats) for as long as its context
// allows.
func TestBlobReadWithLostAnswersFailsInBoundedTime(t *testing.T) {
	t.Parallel()
	b, fz, ctx := behindFreezer(t)
	d, err := b.Blobs().Put(ctx, []byte("workspace bytes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Blobs().GetOnce(ctx, d); err != nil {
		t.Fatalf("before the answers are lost: %v", err)
	}
	fz.freeze()
	_, err = b.Blobs().GetOnce(ctx, d)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("a read with every answer lost: %v (caller's context: %v); want it to fail on its own bound first", err, ctx.Err())
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read with every answer lost: %v, want a deadline error", err)
	}
}

// A pipelined append whose acknowledgement is lost fails on its own bound,
// not at the caller's far-off deadline.
func TestAsyncAppendWithLostAckFailsInBoundedTime(t *testing.T) {
	t.Parallel()
	b, fz, ctx := behindFreezer(t)
	fz.freeze()
	a, err := b.AppendAsync(bus.Expect{}, bus.Pending{Fact: bustest.Turn(t, "s", "r", 1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Wait(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("an append whose ack is lost: %v (caller's context: %v); want it to fail on its own bound first", err, ctx.Err())
	}
}

// A model limit's watch and slot listing whose answers are lost fail on
// their own bound, as transient: a runner waiting for a slot while a node
// restarts hands its run back instead of waiting for as long as its run's
// context lets it (TestFaultRollingRestart found one stuck for minutes on
// the watch's consumer creation).
func TestLimitWatchAndSlotsWithLostAnswersFailInBoundedTime(t *testing.T) {
	t.Parallel()
	b, fz, ctx := behindFreezer(t)
	l := b.Limits()
	fz.freeze()
	// The two wait out their bounds at once, as the writes below do.
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, _, err := l.Watch(ctx, "frozen"); err == nil || ctx.Err() != nil || !bus.Transient(err) {
			t.Errorf("a watch with every answer lost: %v (caller's context: %v); want a transient error on its own bound", err, ctx.Err())
		}
	})
	wg.Go(func() {
		if _, _, err := l.TakeSlot(ctx, "frozen", 1, "me", 10*time.Second); err == nil || ctx.Err() != nil || !bus.Transient(err) {
			t.Errorf("a slot taken with every answer lost: %v (caller's context: %v); want a transient error on its own bound", err, ctx.Err())
		}
	})
	wg.Wait()
}

// Every read and write of a limit's keys is bounded like any API request:
// a runner whose slot create, renewal, release or adaptive state lost its
// answer with a dying stream leader must hand its run back, not wait as
// long as the run's own deadline (TestFaultLoseTheStreamLeader once found
// a run waiting minutes in a slot's create).
func TestEveryLimitWriteWithLostAnswersFailsInBoundedTime(t *testing.T) {
	t.Parallel()
	b, fz, ctx := behindFreezer(t)
	l := b.Limits()
	slot, ok, err := l.TakeSlot(ctx, "frozen", 2, "me", 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("take a slot before the answers are lost: %v, %v", ok, err)
	}
	fz.freeze()
	calls := map[string]func() error{
		"load state": func() error { _, _, err := l.LoadState(ctx, "frozen"); return err },
		"save state": func() error { _, err := l.SaveState(ctx, "frozen", []byte("{}"), 0); return err },
		"renew":      func() error { return slot.Renew(ctx) },
		"release":    func() error { return slot.Release(ctx) },
	}
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Go(func() {
			if err := call(); err == nil || ctx.Err() != nil || !bus.Transient(err) {
				t.Errorf("%s with every answer lost: %v (caller's context: %v); want a transient error on its own bound", name, err, ctx.Err())
			}
		})
	}
	wg.Wait()
}
