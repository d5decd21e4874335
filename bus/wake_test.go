package bus_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

func decided(t *testing.T, suite, run string, pos uint64, turn uint32) events.Fact {
	t.Helper()
	f, err := events.NewFact(events.Meta{
		Suite: suite, Run: run, TaskGeneration: 1, Position: pos,
		Producer: events.Producer{Service: events.OwnerDecider, Instance: "test-decider"},
	}, events.StopDecided{Decision: events.StopDecision{DecisionID: fmt.Sprintf("d-%d", turn), Turn: turn, TaskGeneration: 1, Result: events.ContinueWith("go on")}})
	if err != nil {
		t.Fatalf("make fact: %v", err)
	}
	return f
}

// A runner waiting for a decision reads the log when it wakes. A wake that
// comes before the stream can serve the fact (a subscriber on the fact's own
// subject hears of it while the server still writes it) makes every turn
// read twice and pause in between: with fsync on every write, that was
// every turn.
func TestAStopDecisionWakeComesOnceTheFactCanBeRead(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.StartWith(t, bus.EmbeddedConfig{Durability: bus.SyncAlways})
	wake, stop, err := b.WakeOn("s", "r1", events.KindStopDecided)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var expect bus.Expect
	for i := range 20 {
		pos := uint64(i + 1)
		done := make(chan error, 1)
		go func() {
			recs, err := b.Append(ctx, expect, bus.Pending{Fact: decided(t, "s", "r1", pos, uint32(pos))})
			if err == nil {
				expect = expect.Then(recs[0].Seq)
			}
			done <- err
		}()
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatalf("decision %d: no wake", pos)
		}
		log, err := b.LoadRun(ctx, "s", "r1")
		if err != nil {
			t.Fatal(err)
		}
		if got := len(log.Records); got != i+1 {
			t.Errorf("decision %d: the log read on its wake holds %d facts, want %d", pos, got, i+1)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A FACTS stream made before stored decisions were announced is used as it
// is (factline changes no existing stream behind the operator's back), and
// a runner waiting on it is still woken, by the fact's own subject.
func TestAStreamWithoutTheAnnouncementStillWakes(t *testing.T) {
	ctx := testCtx(t)
	srv := bustest.Server(t, bus.EmbeddedConfig{Durability: bus.SyncInterval})
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: bus.FactsStream, Subjects: []string{"fact.>"}, Storage: jetstream.FileStorage,
		Duplicates: 2 * time.Minute, AllowDirect: true, DenyDelete: true, DenyPurge: true,
	}); err != nil {
		t.Fatal(err)
	}
	b := bustest.OpenWith(t, srv, bus.Config{})
	st, err := js.Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	if rp := st.CachedInfo().Config.RePublish; rp != nil {
		t.Fatalf("opening the bus changed the existing stream: republish %+v", rp)
	}
	wake, stop, err := b.WakeOn("s", "r1", events.KindStopDecided)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: decided(t, "s", "r1", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake for a decision on a stream without the announcement")
	}
}
