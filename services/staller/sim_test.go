package staller_test

import (
	"context"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/runnertest"
)

// The runner is not part of this package; these tests write the runner's
// facts themselves, through bus.Commit with the runner's producer role,
// exactly as the runner contract describes them.

// Shared with the other downstream services' tests.
const caseYAML = runnertest.SimCaseYAML

func testCtx(t *testing.T) context.Context { return runnertest.Ctx(t) }

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
