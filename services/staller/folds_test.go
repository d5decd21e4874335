package staller_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/staller"
)

// handleNewest hands the run's newest turn.completed to svc.
func handleNewest(t *testing.T, ctx context.Context, b *bus.Bus, svc *staller.Service, suite, run string) {
	t.Helper()
	log, err := b.LoadRun(ctx, suite, run)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(log.Records) - 1; i >= 0; i-- {
		if _, ok := log.Records[i].Fact.Body.(events.TurnCompleted); ok {
			if err := svc.Handle(ctx, bus.Delivery{Record: log.Records[i], Deliveries: 1}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("no turn.completed")
}

// Observing a turn folds the facts since the turn before, not the whole
// run again: a turn's cost does not grow with the run. The observations
// are the ones a fold of the whole log makes: the same run played twice,
// one staller observing every turn of the first, a new staller (nothing
// cached) each turn of the second, observes both alike.
func TestObservingATurnFoldsOnlyWhatIsNew(t *testing.T) {
	const turns = 24
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	inc, full := newSim(b, "inc", "run-1"), newSim(b, "full", "run-1")
	for _, s := range []*sim{inc, full} {
		if err := s.Request(ctx, cd, td); err != nil {
			t.Fatal(err)
		}
	}
	one := kittest.Must(staller.New(b, kit.WithInstance("one")))
	var perTurn []int64
	for i := 1; i <= turns; i++ {
		for _, s := range []*sim{inc, full} {
			if _, err := s.Step(ctx, events.Continue(), scriptTurn(i)...); err != nil {
				t.Fatal(err)
			}
		}
		before := staller.Folded(one)
		handleNewest(t, ctx, b, one, "inc", "run-1")
		perTurn = append(perTurn, staller.Folded(one)-before)
		handleNewest(t, ctx, b, kittest.Must(staller.New(b, kit.WithInstance("fresh"))), "full", "run-1")
	}
	for i, n := range perTurn[1:] {
		// A turn of the simulated run is at most nine facts, with the
		// observation of the turn before.
		if n > 9 {
			t.Errorf("turn %d folded %d facts, want only those since turn %d", i+2, n, i+1)
		}
	}
	logInc, err := b.LoadRun(ctx, "inc", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	logFull, err := b.LoadRun(ctx, "full", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	gotInc, gotFull := observed(logInc), observed(logFull)
	if len(gotInc) != turns || len(gotFull) != turns {
		t.Fatalf("observed %d and %d turns, want %d each", len(gotInc), len(gotFull), turns)
	}
	actions := 0
	for turn := uint32(1); turn <= turns; turn++ {
		a := gotInc[turn][0].Fact.Body.(events.StallObserved).Observation
		f := gotFull[turn][0].Fact.Body.(events.StallObserved).Observation
		if !reflect.DeepEqual(a, f) {
			t.Errorf("turn %d observed differently folding on (%+v) than folding the whole log (%+v)", turn, a, f)
		}
		if a.Action != nil {
			actions++
		}
	}
	if actions == 0 {
		t.Fatal("no turn took a stall action: the runs say too little to compare")
	}
}
