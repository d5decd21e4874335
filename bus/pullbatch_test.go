package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// pullConsumer makes the durable pull consumer "pulls" of run claims.
func pullConsumer(ctx context.Context, t *testing.T, b *bus.Bus) {
	t.Helper()
	if _, err := b.JetStream().CreateOrUpdateConsumer(ctx, bus.FactsStream, jetstream.ConsumerConfig{Durable: "pulls",
		FilterSubjects: []string{events.KindFilter(events.KindRunClaimed)}, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

// waitingPulls is how many pull requests the consumer "pulls" has waiting.
func waitingPulls(ctx context.Context, b *bus.Bus) int {
	c, err := b.JetStream().Consumer(ctx, bus.FactsStream, "pulls")
	if err != nil {
		return -1
	}
	ci, err := c.Info(ctx)
	if err != nil {
		return -1
	}
	return ci.NumWaiting
}

// The bus's own pull-ahead pull answers as nats.go's Fetch did, for each
// thing the server may say: a consumer nobody serves is "no responders",
// one with nothing to deliver a timeout once the pull's expiry has
// passed, a full batch its messages in order with no error, a short one
// what there was and then a timeout; its messages are deliveries whose
// metadata, acks and naks reach the server. Each pull leaves no inbox
// behind once read to its end.
func TestPullBatchAnswersAsTheServerDoes(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	subs := b.Conn().NumSubscriptions()
	inboxesGone := func(what string) {
		t.Helper()
		if n := b.Conn().NumSubscriptions(); n != subs {
			t.Errorf("after %s the connection holds %d subscriptions, want %d: the pull's inbox is left", what, n, subs)
		}
	}
	if _, err := b.PullBatch(ctx, "nobody", 4, 200*time.Millisecond); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("a pull of a consumer that does not exist: %v, want no responders", err)
	}
	inboxesGone("a pull nobody answered")
	pullConsumer(ctx, t, b)
	if got, err := b.PullBatch(ctx, "pulls", 4, 200*time.Millisecond); !errors.Is(err, nats.ErrTimeout) || len(got) != 0 {
		t.Errorf("a pull with nothing to deliver: %d messages, %v, want none and a timeout", len(got), err)
	}
	inboxesGone("a pull that timed out")
	var pending []bus.Pending
	for pos := uint64(1); pos <= 3; pos++ {
		pending = append(pending, bus.Pending{Fact: bustest.Claim(t, "s", "r1", pos)})
	}
	if _, err := b.Append(ctx, bus.Expect{}, pending...); err != nil {
		t.Fatal(err)
	}
	full, err := b.PullBatch(ctx, "pulls", 2, 2*time.Second)
	if err != nil || len(full) != 2 {
		t.Fatalf("a pull of 2 with 3 to deliver: %d messages, %v, want 2 and no error", len(full), err)
	}
	inboxesGone("a full batch")
	short, err := b.PullBatch(ctx, "pulls", 4, 300*time.Millisecond)
	if !errors.Is(err, nats.ErrTimeout) || len(short) != 1 {
		t.Fatalf("a pull of 4 with 1 left: %d messages, %v, want 1 and a timeout", len(short), err)
	}
	inboxesGone("a short batch")
	var seqs []uint64
	for _, m := range append(full, short...) {
		md, err := m.Metadata()
		if err != nil || md.Stream != bus.FactsStream || md.Consumer != "pulls" || md.NumDelivered != 1 ||
			m.Subject() != "fact.s.r1.run.claimed" || len(m.Data()) == 0 {
			t.Fatalf("a delivery: %s %+v %v", m.Subject(), md, err)
		}
		seqs = append(seqs, md.Sequence.Stream)
	}
	if !(seqs[0] < seqs[1] && seqs[1] < seqs[2]) {
		t.Errorf("the deliveries came in the stream's order %v", seqs)
	}
	if err := full[0].Nak(); err != nil {
		t.Fatal(err)
	}
	for _, m := range full[1:] {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	if err := short[0].DoubleAck(ctx); err != nil {
		t.Fatalf("ack: %v", err)
	}
	again, err := b.PullBatch(ctx, "pulls", 4, 300*time.Millisecond)
	if !errors.Is(err, nats.ErrTimeout) || len(again) != 1 {
		t.Fatalf("a pull after one nak and two acks: %d messages, %v, want the one handed back and a timeout", len(again), err)
	}
	if md, _ := again[0].Metadata(); md.NumDelivered != 2 || md.Sequence.Stream != seqs[0] {
		t.Errorf("the message handed back came as delivery %d of sequence %d, want 2 of %d", md.NumDelivered, md.Sequence.Stream, seqs[0])
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.PullBatch(cctx, "pulls", 4, 2*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("a pull whose context ended: %v", err)
	}
	inboxesGone("a pull whose context ended")
}

// A pull withdrawn while it waits (the pull loop stopping) is gone from
// the server before a nak sent after it: the message handed back goes to
// the next pull, as its second delivery, never into the withdrawn one
// (from which it would come back only after the ack wait).
func TestAWithdrawnPullTakesNothingHandedBackAfter(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	pullConsumer(ctx, t, b)
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	for try := range 8 {
		got, err := b.PullBatch(ctx, "pulls", 1, 2*time.Second)
		if err != nil || len(got) != 1 {
			t.Fatalf("try %d: the pull: %d messages, %v", try, len(got), err)
		}
		held := got[0]
		pctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := b.PullBatch(pctx, "pulls", 4, 10*time.Second)
			done <- err
		}()
		testutil.Within(t, 10*time.Second, "the second pull waiting", func() bool { return waitingPulls(ctx, b) >= 1 })
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("try %d: the withdrawn pull: %v", try, err)
		}
		if err := held.Nak(); err != nil {
			t.Fatal(err)
		}
		again, err := b.PullOne(ctx, "pulls", 2*time.Second)
		if err != nil {
			t.Fatalf("try %d: the message handed back after a pull was withdrawn did not come to the next pull: %v", try, err)
		}
		md, _ := again.Metadata()
		// Each try delivers it twice: to the first pull, then to PullOne.
		if want := uint64(2*try + 2); md.NumDelivered != want {
			t.Errorf("try %d: the message handed back came as delivery %d, want %d", try, md.NumDelivered, want)
		}
		if err := again.Nak(); err != nil {
			t.Fatal(err)
		}
	}
}

// A consumer deleted under a waiting pull ends it with the server's 409,
// as jetstream.ErrConsumerDeleted.
func TestPullBatchOfADeletedConsumer(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	pullConsumer(ctx, t, b)
	done := make(chan error, 1)
	go func() {
		_, err := b.PullBatch(ctx, "pulls", 4, 10*time.Second)
		done <- err
	}()
	testutil.Within(t, 10*time.Second, "the pull waiting", func() bool { return waitingPulls(ctx, b) >= 1 })
	if err := b.JetStream().DeleteConsumer(ctx, bus.FactsStream, "pulls"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, jetstream.ErrConsumerDeleted) {
		t.Errorf("a pull of a consumer deleted under it: %v, want consumer deleted", err)
	}
}

// A pull whose connection is lost while it waits ends (a timeout, once
// the server had its time to answer) rather than wait for ever, leaves no
// inbox behind, and takes nothing: once the connection is back, a message
// appended goes to the next pull as its first delivery.
func TestPullBatchOnALostConnection(t *testing.T) {
	// Parallel: it mostly waits (a pull's expiry and the reply bound) on a
	// server and a proxy of its own.
	t.Parallel()
	ctx := testCtx(t)
	srv := bustest.Server(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	proxy := bustest.StartProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), nil)
	b, err := bus.Dial(ctx, proxy.URL(), bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Conn().Close)
	watch := bustest.OpenWith(t, srv, bus.Config{})
	pullConsumer(ctx, t, b)
	subs := b.Conn().NumSubscriptions()
	done := make(chan error, 1)
	go func() {
		_, err := b.PullBatch(ctx, "pulls", 4, time.Second)
		done <- err
	}()
	testutil.Within(t, 10*time.Second, "the pull waiting", func() bool { return waitingPulls(ctx, watch) >= 1 })
	proxy.Drop()
	select {
	case err := <-done:
		if !errors.Is(err, nats.ErrTimeout) {
			t.Errorf("a pull whose connection was lost: %v, want a timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a pull whose connection was lost never ended")
	}
	if n := b.Conn().NumSubscriptions(); n != subs {
		t.Errorf("after a pull lost with its connection the connection holds %d subscriptions, want %d", n, subs)
	}
	proxy.Heal()
	testutil.Within(t, 20*time.Second, "the connection back", b.Conn().IsConnected)
	if _, err := watch.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	got, err := b.PullBatch(ctx, "pulls", 4, 2*time.Second)
	if len(got) != 1 {
		t.Fatalf("the pull after the connection came back: %d messages, %v, want the one appended", len(got), err)
	}
	if md, _ := got[0].Metadata(); md.NumDelivered != 1 {
		t.Errorf("the message came as delivery %d, want 1: a pull lost with the connection took it", md.NumDelivered)
	}
}
