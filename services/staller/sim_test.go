package staller_test

import (
	"context"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
)

// The runner is not part of this package; these tests write the runner's
// facts themselves, through bus.Commit with the runner's producer role,
// exactly as the runner contract describes them.

// Shared with the other downstream services' tests.
const caseYAML = fleettest.SimCaseYAML

func testCtx(t *testing.T) context.Context { return fleettest.Ctx(t) }

// The runner is simulated by fleettest.Sim.
type sim = fleettest.Sim
type simCall = fleettest.SimCall

var (
	publish = fleettest.PublishYAML
	newSim  = fleettest.NewSim
	await   = fleettest.Await
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
