package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// The bus's own on-demand pull answers as nats.go's Next did, for each
// thing the server may say: a consumer nobody serves is "no responders",
// one with nothing to deliver a timeout once the pull's expiry has
// passed, a message a delivery whose metadata, acks and nak reach the
// server, and the end of ctx its error.
func TestPullOneAnswersAsTheServerDoes(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	if _, err := b.PullOne(ctx, "nobody", 200*time.Millisecond); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("a pull of a consumer that does not exist: %v, want no responders", err)
	}
	if _, err := b.JetStream().CreateOrUpdateConsumer(ctx, bus.FactsStream, jetstream.ConsumerConfig{Durable: "pulls",
		FilterSubjects: []string{events.KindFilter(events.KindRunClaimed)}, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PullOne(ctx, "pulls", 200*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Errorf("a pull with nothing to deliver: %v, want a timeout", err)
	}
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: bustest.Claim(t, "s", "r1", 1)}); err != nil {
		t.Fatal(err)
	}
	m, err := b.PullOne(ctx, "pulls", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	md, err := m.Metadata()
	if err != nil || md.Stream != bus.FactsStream || md.Consumer != "pulls" || md.NumDelivered != 1 || md.Sequence.Stream == 0 ||
		m.Subject() != "fact.s.r1.run.claimed" || len(m.Data()) == 0 {
		t.Fatalf("the delivery: %s %+v %v", m.Subject(), md, err)
	}
	if err := m.Nak(); err != nil {
		t.Fatal(err)
	}
	again, err := b.PullOne(ctx, "pulls", 2*time.Second)
	if err != nil {
		t.Fatalf("the message handed back: %v", err)
	}
	if md2, _ := again.Metadata(); md2.NumDelivered != 2 || md2.Sequence.Stream != md.Sequence.Stream {
		t.Errorf("the message handed back came as delivery %d of sequence %d, want 2 of %d", md2.NumDelivered, md2.Sequence.Stream, md.Sequence.Stream)
	}
	if err := again.DoubleAck(ctx); err != nil {
		t.Fatalf("ack: %v", err)
	}
	if _, err := b.PullOne(ctx, "pulls", 200*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Errorf("a pull after the ack: %v, want a timeout (nothing left)", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.PullOne(cctx, "pulls", 2*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("a pull whose context ended: %v", err)
	}
}
