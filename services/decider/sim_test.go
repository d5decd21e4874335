package decider_test

import (
	"context"
	"fmt"
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

// decided returns the run's stop.decided facts by turn.
func decided(log bus.RunLog) map[uint32][]bus.Record {
	out := map[uint32][]bus.Record{}
	for _, r := range log.Records {
		if sd, ok := r.Fact.Body.(events.StopDecided); ok {
			out[sd.Decision.Turn] = append(out[sd.Decision.Turn], r)
		}
	}
	return out
}

// fakeStaller stands in for the stall handler: it observes every
// turn.completed with no action, once, under the staller's message ID.
func fakeStaller(t *testing.T, b *bus.Bus) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(ctx, bus.ConsumerConfig{Name: "fake-staller", Filters: []string{events.KindFilter(events.KindTurnCompleted)}},
			func(ctx context.Context, d bus.Delivery) error {
				tc := d.Fact.Body.(events.TurnCompleted)
				id := fmt.Sprintf("%s/%d/stall", d.Fact.Run, tc.Evidence.Turn)
				_, err := b.Commit(ctx, nil, d.Fact.Suite, d.Fact.Run, func(log bus.RunLog) ([]bus.Pending, error) {
					if _, ok := log.ByMsgID(id); ok {
						return nil, nil
					}
					f, err := events.NewFact(events.Meta{
						Suite: d.Fact.Suite, Run: d.Fact.Run, TaskGeneration: 1, Position: log.NextPosition(), Causation: d.Fact.ID.String(),
						Producer: events.Producer{Service: events.OwnerStaller, Instance: "fake"},
					}, events.StallObserved{Turn: tc.Evidence.Turn, Observation: events.StallObservation{Position: d.Fact.Position}})
					return []bus.Pending{{Fact: f, MsgID: id}}, err
				})
				return err
			})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fake staller: %v", err)
		}
	})
}
