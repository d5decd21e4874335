package staller_test

import (
	"fmt"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/staller"
)

// The staller's memory of runs is bounded (1024 by default): a run it
// had loaded, that ended since, and that more runs than the bound pushed
// out of its memory is loaded again from the log when a turn.completed
// of it is redelivered, and its ending is seen there: nothing is
// observed. So is a run still held in memory, loaded before its ending:
// the append is conditional on the run's last sequence, and the reload
// after the conflict sees the ending. Either way, no stall.observed for
// an ended run, however many runs ended meanwhile.
func TestNoObservationForAnEndedRunPushedOutOfMemory(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cd, td := publish(t, ctx, b, caseYAML, cases.StallPolicy{})
	const held = 2
	for _, evict := range []bool{true, false} {
		name := fmt.Sprintf("evicted-%v", evict)
		svc := kittest.Must(staller.New(b, kit.WithInstance(name), kit.WithRunCache(held)))
		ended := newSim(b, name, "ended")
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(ended.Request(ctx, cd, td))
		_, err := ended.Step(ctx, events.Continue(), scriptTurn(1)...)
		must(err)
		handleNewest(t, ctx, b, svc, name, "ended") // loaded and kept: turn 1 observed
		_, err = ended.Step(ctx, events.Continue(), scriptTurn(2)...)
		must(err)
		log, err := b.LoadRun(ctx, name, "ended")
		must(err)
		var tc2 bus.Record
		for _, r := range log.Records {
			if c, ok := r.Fact.Body.(events.TurnCompleted); ok && c.Evidence.Turn == 2 {
				tc2 = r
			}
		}
		must(ended.Commit(ctx, "ended", events.OwnerRunner, events.RunEnded{Status: events.RunCancelled, Reason: "cancelled"}))
		if evict {
			// More runs than the staller holds, each loaded after it.
			for i := range held + 1 {
				other := newSim(b, name, fmt.Sprintf("other-%d", i))
				must(other.Request(ctx, cd, td))
				_, err := other.Step(ctx, events.Continue(), scriptTurn(1)...)
				must(err)
				handleNewest(t, ctx, b, svc, name, fmt.Sprintf("other-%d", i))
			}
		}
		// turn.completed of turn 2, redelivered after the run ended.
		must(svc.Handle(ctx, bus.Delivery{Record: tc2, Deliveries: 2}))
		log, err = b.LoadRun(ctx, name, "ended")
		must(err)
		if obs := observed(log); len(obs[2]) != 0 || len(obs[1]) != 1 {
			t.Errorf("%s: observations by turn %v, want turn 1's alone: none after the run ended", name, obs)
		}
	}
}
