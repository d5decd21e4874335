package staller_test

import (
	"context"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/runnertest"
)

// The runner is not part of this package; these tests write the runner's
// facts themselves, through bus.Commit with the runner's producer role,
// exactly as the runner contract describes them.

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

const caseYAML = `
id: fix-add
instruction: Fix calc.go so that the tests pass.
checks:
  - id: tests
    command: ./check.sh
stall:
  idle_turns: 2
  repair_budget: 0
`

// The runner is simulated by runnertest.Sim.
type sim = runnertest.Sim
type simCall = runnertest.SimCall

var (
	publish = runnertest.PublishYAML
	newSim  = runnertest.NewSim
	await   = runnertest.Await
)

// observed returns the run's stall.observed facts by turn.
func observed(log bus.RunLog) map[uint32][]bus.Record {
	out := map[uint32][]bus.Record{}
	for _, r := range log.Records {
		if so, ok := r.Fact.Body.(events.StallObserved); ok {
			out[so.Turn] = append(out[so.Turn], r)
		}
	}
	return out
}
