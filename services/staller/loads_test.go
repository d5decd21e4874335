package staller_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/staller"
)

// Handling a delivery that is the run's newest fact asks the server where
// the run ends once: the load through the delivered fact already knows,
// and the commit appends on it with the run-wide expected sequence (a
// stale view would only conflict and reload). Before, the commit loaded
// the run again, one more round trip on every turn of every run.
func TestHandlingTheRunsNewestFactAsksForTheRunsEndOnce(t *testing.T) {
	ctx := testCtx(t)
	b, srv := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	s := newSim(b, "suite", "run-1")
	if err := s.Request(ctx, cd, td); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, events.Continue()); err != nil {
		t.Fatal(err)
	}
	log, err := b.LoadRun(ctx, "suite", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	svc := kittest.Must(staller.New(b, kit.WithInstance("one")))
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("$JS.API.DIRECT.GET." + bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	last := log.Records[len(log.Records)-1]
	if err := svc.Handle(ctx, bus.Delivery{Record: last, Deliveries: 1}); err != nil {
		t.Fatal(err)
	}
	// After the flush every request the handler made is queued here.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	asked := 0
	for {
		m, err := sub.NextMsg(50 * time.Millisecond)
		if err != nil {
			break
		}
		var req struct {
			LastFor string `json:"last_by_subj"`
		}
		if json.Unmarshal(m.Data, &req) == nil && req.LastFor == "fact.suite.run-1.>" {
			asked++
		}
	}
	after, err := b.LoadRun(ctx, "suite", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := observed(after)[1]; len(got) != 1 {
		t.Fatalf("%d stall.observed for turn 1, want 1", len(got))
	}
	if n := asked; n != 1 {
		t.Errorf("handling the run's newest fact asked for the run's end %d times, want 1", n)
	}
}
