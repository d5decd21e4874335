package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// A run's control watch outlives the run by up to one pull (5 s) before
// it notices the run's end. A cancel and a steer sent in that time reach,
// at most, the ended attempt's own signals in memory, which nothing reads
// any more: no control.accepted, and no fact at all, follows run.ended
// once the watch is gone. (A later attempt of the run, if any, has a
// watch of its own that reads every signal from the stream's oldest, and
// the log's control.accepted facts say which were taken.)
func TestAControlSentAsTheRunEndsChangesNothing(t *testing.T) {
	// Sent as run.ended is committed, while the run's watch still runs.
	e := startTuned(t, func(b *bus.Bus) []kit.Option {
		return []kit.Option{runner.WithAfterCommit(func(f events.Fact) {
			if f.Kind() != events.KindRunEnded {
				return
			}
			ctx := context.Background()
			must(t, b.Controls().Send(ctx, "suite", "late", events.Control{Signal: events.SignalCancel, Reason: "too late"}))
			must(t, b.Controls().Send(ctx, "suite", "late", events.Control{Signal: events.SignalSteer, Instruction: "do more"}))
		})}
	}, nil)
	log, end := e.run(fixtureCase(t, "{steps: 6}"), twoTurnScript, "late")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	testutil.Within(t, time.Minute, "the run's control watch to end", func() bool {
		s, err := e.b.JetStream().Stream(e.ctx, bus.ControlStream)
		if err != nil {
			return false
		}
		info, err := s.Info(e.ctx)
		return err == nil && info.State.Consumers == 0
	})
	after, err := e.b.LoadRun(e.ctx, "suite", "late")
	must(t, err)
	for _, r := range after.Records[len(log.Records):] {
		if r.Fact.Producer.Service == events.OwnerRunner {
			t.Errorf("the runner committed %s at %d after the run ended", r.Fact.Kind(), r.Fact.Position)
		}
	}
	for _, f := range after.Facts() {
		if _, ok := f.Body.(events.ControlAccepted); ok {
			t.Errorf("a control was accepted: %+v", f.Body)
		}
	}
}
