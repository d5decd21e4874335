package decider_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
)

// decideNewest observes the run's last turn (as the stall handler would)
// and hands that stall.observed to svc.
func decideNewest(t *testing.T, ctx context.Context, b *bus.Bus, s *sim, svc *decider.Service, suite, run string) {
	t.Helper()
	n := s.Turns()
	if err := s.Commit(ctx, fmt.Sprint("stall-", n), events.OwnerStaller, events.StallObserved{Turn: n, Observation: events.StallObservation{Position: 1}}); err != nil {
		t.Fatal(err)
	}
	log, err := b.LoadRun(ctx, suite, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Handle(ctx, bus.Delivery{Record: log.Records[len(log.Records)-1], Deliveries: 1}); err != nil {
		t.Fatal(err)
	}
}

// A decision folds the facts since the run's decision before, not the
// whole run again: a turn's cost does not grow with the run. The decisions
// are the ones a fold of the whole log makes: the same run played twice,
// one decider deciding every turn of the first, a new decider (nothing
// cached) each turn of the second, decides both alike.
func TestADecisionFoldsOnlyWhatIsNew(t *testing.T) {
	const turns = 20
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	inc, full := newSim(b, "inc", "run-1"), newSim(b, "full", "run-1")
	for _, s := range []*sim{inc, full} {
		if err := s.Request(ctx, cd, td); err != nil {
			t.Fatal(err)
		}
	}
	one := kittest.Must(decider.New(b, kit.WithInstance("one")))
	var perTurn []int64
	for i := 1; i <= turns; i++ {
		calls := []simCall{{Tool: "read_file", Args: fmt.Sprint("calc.go ", i), Out: fmt.Sprint("v", i)}}
		if i%3 == 0 {
			result := "fail"
			if i%2 == 0 {
				result = "pass"
			}
			calls = []simCall{{Tool: "edit_file", Args: fmt.Sprint("edit ", i), Out: "ok", Applied: true},
				{Tool: "run_command", Args: "./check.sh", Out: result, Check: "tests", Result: result}}
		}
		for _, s := range []*sim{inc, full} {
			if _, err := s.Step(ctx, events.Continue(), calls...); err != nil {
				t.Fatal(err)
			}
		}
		before := decider.Folded(one)
		decideNewest(t, ctx, b, inc, one, "inc", "run-1")
		perTurn = append(perTurn, decider.Folded(one)-before)
		decideNewest(t, ctx, b, full, kittest.Must(decider.New(b, kit.WithInstance("fresh"))), "full", "run-1")
	}
	for i, n := range perTurn[1:] {
		// A turn of the simulated run is at most nine facts, with the
		// observation and the decision of the turn before.
		if n > 9 {
			t.Errorf("decision %d folded %d facts, want only those since decision %d", i+2, n, i+1)
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
	gotInc, gotFull := decided(logInc), decided(logFull)
	if len(gotInc) != turns || len(gotFull) != turns {
		t.Fatalf("decided %d and %d turns, want %d each", len(gotInc), len(gotFull), turns)
	}
	kinds := map[string]bool{}
	for turn := uint32(1); turn <= turns; turn++ {
		a := gotInc[turn][0].Fact.Body.(events.StopDecided).Decision
		f := gotFull[turn][0].Fact.Body.(events.StopDecided).Decision
		if !reflect.DeepEqual(a, f) {
			t.Errorf("turn %d decided differently folding on (%+v) than folding the whole log (%+v)", turn, a, f)
		}
		kinds[fmt.Sprintf("%T %v", a.Result.Variant(), a.Result.Variant())] = true
	}
	if len(kinds) < 2 {
		t.Fatalf("every decision alike (%v): the runs say too little to compare", kinds)
	}
}

// A run the decider finishes leaves no fold, and no log in its run cache,
// behind: nothing decides on it again (an ended run is not decided, TestNothingDecidedAfterTheRunEnded),
// so what is kept for it would only wait for the cache to evict it, and the
// decider's memory would follow the runs ended (up to its run cache's
// size, 1,024 a process) rather than the runs in flight. Runs still going
// keep theirs.
func TestAFinishedRunLeavesNoFold(t *testing.T) {
	const finished = 5
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	one := kittest.Must(decider.New(b, kit.WithInstance("one")))
	live := newSim(b, "suite", "live")
	if err := live.Request(ctx, cd, td); err != nil {
		t.Fatal(err)
	}
	if _, err := live.Step(ctx, events.Continue()); err != nil {
		t.Fatal(err)
	}
	decideNewest(t, ctx, b, live, one, "suite", "live")
	for r := range finished {
		run := fmt.Sprint("run-", r)
		s := newSim(b, "suite", run)
		if err := s.Request(ctx, cd, td); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(ctx, events.Continue()); err != nil {
			t.Fatal(err)
		}
		decideNewest(t, ctx, b, s, one, "suite", run)
		if _, err := s.Step(ctx, events.ProposeDone(events.EvidenceRef(fmt.Sprintf("t%d/call-2", s.Turns()+1))),
			simCall{Tool: "edit_file", Args: "fix", Out: "ok", Applied: true},
			simCall{Tool: "run_command", Args: "./check.sh", Out: "PASS", Check: "tests", Result: "pass"},
			simCall{Tool: "task_complete", Args: "{}", Out: "noted"}); err != nil {
			t.Fatal(err)
		}
		decideNewest(t, ctx, b, s, one, "suite", run)
		log, err := b.LoadRun(ctx, "suite", run)
		if err != nil {
			t.Fatal(err)
		}
		last := decided(log)[s.Turns()]
		if len(last) != 1 || last[0].Fact.Body.(events.StopDecided).Decision.Result.Type() != "finish" {
			t.Fatalf("%s: turn %d decided %v, want one finish", run, s.Turns(), last)
		}
	}
	if n := decider.FoldsKept(one); n != 1 {
		t.Errorf("the decider keeps %d runs' folds after %d runs finished and one still going, want 1 (the one going)", n, finished)
	}
	if n := decider.RunsKept(one); n != 1 {
		t.Errorf("the decider's run cache keeps %d runs' logs after %d runs finished and one still going, want 1 (the one going)", n, finished)
	}
}
