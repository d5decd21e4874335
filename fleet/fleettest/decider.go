// Package fleettest holds stand-ins for members of a fleet, for the tests
// of the others: a simulated runner (Sim) that writes a run's facts as the
// runner contract describes them, for tests of the services downstream of
// it; a stand-in stop decider (Decider), for tests of the runner alone; and
// what a submitter does (Publish, Request), with ways to wait on a run
// (WaitEnded, Await). Each plays its part through the bus only.
//
// It imports no service, so that any service's tests may use it without
// one service's tests reaching into another (a guard test in package
// fleet says so).
package fleettest

import (
	"context"
	"fmt"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// Decider is a minimal stop decider: it accepts any proposal (done),
// ends blocked on report_blocked, and otherwise continues. It commits one
// stop.decided per completed turn, like the real decider, so the runner
// under test reacts only to facts.
type Decider struct{ Bus *bus.Bus }

// Run consumes turn.completed until ctx ends.
func (d Decider) Run(ctx context.Context) error {
	runs := d.Bus.NewRunLogs(64)
	return d.Bus.Consume(ctx, bus.ConsumerConfig{
		Name:    "test-decider",
		Filters: []string{events.KindFilter(events.KindTurnCompleted)},
		Workers: 4,
	}, func(ctx context.Context, del bus.Delivery) error {
		tc := del.Fact.Body.(events.TurnCompleted)
		turn := tc.Evidence.Turn
		_, err := d.Bus.Commit(ctx, runs, del.Fact.Suite, del.Fact.Run, func(log bus.RunLog) ([]bus.Pending, error) {
			var result events.StopResult
			switch in := tc.Evidence.ActorIntent.Variant().(type) {
			case events.IntentProposeDone:
				result = events.Finish(events.StopFinish{Status: events.FinishDone, Evidence: in.Evidence, Reason: "test decider: proposal accepted"})
			case events.IntentReportBlocked:
				result = events.Finish(events.StopFinish{Status: events.FinishBlocked, Unmet: in.Unmet, Reason: in.Reason})
			default:
				result = events.ContinueWith("")
			}
			id := events.MessageID(del.Fact.Run, events.KindStopDecided, fmt.Sprint(turn))
			f, err := events.NewFact(events.Meta{Suite: del.Fact.Suite, Run: del.Fact.Run, TaskGeneration: del.Fact.TaskGeneration,
				Position: log.NextPosition(), Causation: del.Fact.ID.String(),
				Producer: events.Producer{Service: events.OwnerDecider, Instance: "test-decider"}},
				events.StopDecided{Decision: events.StopDecision{DecisionID: id, Turn: turn, TaskGeneration: del.Fact.TaskGeneration, Result: result}})
			return []bus.Pending{{Fact: f, MsgID: id}}, err
		})
		return err
	})
}
