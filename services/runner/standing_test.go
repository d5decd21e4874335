package runner_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// An attempt keeps its run's standing as a fold: each step folds the
// facts since its last look, not the whole log again, so over a run the
// attempt folds about as many facts as the run holds. Reading the whole log
// at every step (ReadProgress at each of a turn's several steps) folds
// thousands for a run of 30 turns.
func TestAnAttemptFoldsEachFactOfItsRunAboutOnce(t *testing.T) {
	const turns = 30
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc, err := runner.New(b, runner.WithWorkDir(t.TempDir()), kit.WithWorkers(1), runner.WithDecisionTimeout(time.Minute))
	must(t, err)
	var folded atomic.Int64
	var held atomic.Int32
	runner.SetAfterLoop(t, svc, func(run string, n int64, facts int) {
		if run == "long" {
			folded.Store(n)
			held.Store(int32(facts))
		}
	})
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = svc.Run(rctx); done <- struct{}{} }()
	go func() { _ = fleettest.Decider{Bus: b}.Run(rctx); done <- struct{}{} }()
	defer func() { stop(); <-done; <-done }()

	var turnsYAML []string
	for range turns - 1 {
		turnsYAML = append(turnsYAML, "  - calls: [{name: read_file, args: {path: answer.txt}}]\n")
	}
	turnsYAML = append(turnsYAML, "  - text: done\n")
	p, err := fleettest.Publish(ctx, b, fixtureCase(t, "{steps: 40}"), treatment(t, script(turnsYAML...)))
	must(t, err)
	must(t, fleettest.Request(ctx, b, "suite", "long", p, 1))
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", "long")
	must(t, err)
	if n := len(kinds(log, events.KindTurnStarted)); n != turns {
		t.Fatalf("%d turns (run ended %s: %s), want %d", n, end.Status, end.Reason, turns)
	}
	n, facts := folded.Load(), int(held.Load())
	if facts == 0 || facts > len(log.Records) {
		t.Fatalf("the attempt's last look held %d facts of the run's %d", facts, len(log.Records))
	}
	// Each fact once, and the log once more for a look that found it no
	// extension of the last (none is expected on one runner; one is let
	// pass).
	if n > int64(2*facts) {
		t.Fatalf("the attempt folded %d facts for a run of %d: the whole log again at some steps", n, facts)
	}
}
