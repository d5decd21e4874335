package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
)

// A control command reports a signal accepted only once the run's log
// cites it in control.accepted, and reports it refused when the run ends
// first: a steer is never reported sent and then silently dropped.
func TestControlWaitsForAcceptance(t *testing.T) {
	t.Parallel()
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sim := fleettest.NewSim(b, "s", "r")
	if err := sim.Commit(ctx, "claimed", events.OwnerRunner, events.RunClaimed{Runner: "x", Lease: 1}); err != nil {
		t.Fatal(err)
	}
	steer := events.Control{ID: "steer-1", Signal: events.SignalSteer, Instruction: "also this"}
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = sim.Commit(ctx, "accepted", events.OwnerRunner, events.ControlAccepted{Control: events.ControlRef{ID: "steer-1", Signal: events.SignalSteer}, Instruction: "also this"})
		_ = sim.Commit(ctx, "generation", events.OwnerRunner, events.TaskGenerationStarted{Generation: 2, Instruction: "also this", Control: "steer-1"})
	}()
	var out bytes.Buffer
	if err := awaitAcceptance(ctx, b, "s", "r", steer, 30*time.Second, &out); err != nil || !strings.Contains(out.String(), "accepted") || !strings.Contains(out.String(), "generation 2") {
		t.Fatalf("accepted steer: %v %q", err, out.String())
	}
	// Not accepted in time: unconfirmed is not success.
	late := events.Control{ID: "steer-2", Signal: events.SignalSteer, Instruction: "later"}
	if err := awaitAcceptance(ctx, b, "s", "r", late, 300*time.Millisecond, &out); err == nil || !strings.Contains(err.Error(), "not accepted within") {
		t.Fatalf("unaccepted steer: %v", err)
	}
	// The run ends first: refused, naming how it ended.
	if err := sim.Commit(ctx, "ended", events.OwnerRunner, events.RunEnded{Status: events.RunDone, Reason: "finished"}); err != nil {
		t.Fatal(err)
	}
	if err := awaitAcceptance(ctx, b, "s", "r", late, 30*time.Second, &out); err == nil || !strings.Contains(err.Error(), "the run ended done") {
		t.Fatalf("steer after the end: %v", err)
	}
}
