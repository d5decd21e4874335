package decider_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/decider/stop"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
)

// A decider stopped mid-decision (SIGTERM, a rolling restart) hands the
// turn back with a nak that carries no delay: the other decider, pulling
// all along, decides the turn, once. Before, the hand-back asked the
// server to wait min(ack wait, 5 s), and the run's turn waited that long
// for a decision (docs/operations.md). The test logs how long the turn
// went undecided after the stop: a measurement, not an assertion.
func TestAStoppedDeciderHandsItsTurnBackAtOnce(t *testing.T) {
	ctx := testCtx(t)
	srv := bustest.Server(t, bus.EmbeddedConfig{Durability: bus.SyncInterval})
	b := bustest.OpenWith(t, srv, bus.Config{})
	ba, bb := bustest.OpenWith(t, srv, bus.Config{}), bustest.OpenWith(t, srv, bus.Config{})
	fakeStaller(t, b)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	// What the deciders answer the server, as the server receives it.
	acks := bustest.WatchAcks(t, srv, decider.ConsumerName)

	// The ack wait of production: the old hand-back's delay was 5 s.
	consumer := kit.WithConsumer(bus.ConsumerConfig{AckWait: 30 * time.Second, Prefetch: 4, Workers: 2})
	start := func(b *bus.Bus, name string, judge decider.Judge) (stop func()) {
		dctx, cancel := context.WithCancel(ctx)
		svc := kittest.Must(decider.New(b, kit.WithInstance(name), consumer, decider.WithJudge(judge, time.Minute)))
		done := make(chan error, 1)
		go func() { done <- svc.Run(dctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("decider %s stopped with %v", name, err)
			}
		}
	}
	// A's judge holds the decision until A stops: a decision in flight.
	judging := make(chan struct{}, 1)
	stopA := start(ba, "A", func(ctx context.Context, _ decider.JudgeRequest) (stop.Opinion, error) {
		judging <- struct{}{}
		<-ctx.Done()
		return stop.Opinion{}, ctx.Err()
	})
	played := make(chan error, 1)
	var dec events.StopDecision
	go func() {
		var err error
		dec, err = play(ctx, b, newSim(b, "suite", "run-1"), cd, td, 1, new(atomic.Int32))
		played <- err
	}()
	select {
	case <-judging:
	case err := <-played:
		t.Fatalf("the run was decided before the decider was stopped: %v", err)
	}
	stopB := start(bb, "B", func(context.Context, decider.JudgeRequest) (stop.Opinion, error) { return stop.Opinion{}, nil })
	defer stopB()
	// B pulls, and so does A (it pulls ahead), before A stops.
	bustest.Pulling(t, ctx, b, decider.ConsumerName, 2)

	stopped := time.Now()
	stopA()
	nak := acks.Naks(t, 1, 30*time.Second)[0]
	if nak != "-NAK" {
		t.Errorf("the stopped decider handed its turn back with %q, want a nak with no delay", nak)
	}
	if err := <-played; err != nil {
		t.Fatal(err)
	}
	if f, ok := dec.Result.Variant().(events.StopFinish); !ok || f.Status != events.FinishDone {
		t.Errorf("the turn taken over was decided %+v, want done", dec.Result.Variant())
	}
	log, err := b.LoadRun(ctx, "suite", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	got := decided(log)[dec.Turn]
	if len(got) != 1 || got[0].Fact.Producer.Instance != "B" {
		t.Fatalf("the turn's decisions %+v, want one, by B", got)
	}
	// For the record, not a pass condition (5 s and more before).
	t.Logf("measured: decider B committed the turn's decision %v after decider A was stopped",
		got[0].Fact.At.Sub(stopped).Round(time.Millisecond))
}
