package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
)

// A steer mid-run starts a new task generation: completion evidence from
// the older generation is stale, so a proposal citing it is not accepted;
// evidence made after the steer is.
func TestSteerMakesOlderEvidenceStale(t *testing.T) {
	t.Parallel()
	f := startFleet(t)
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: scripted\nmodel: {provider: scripted, scripts: x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr.Model.ScriptFiles = map[string]string{"task": script(
		strings.Replace(turn(write("w", "4"), check("c")), "    reserve: 3\n", "    reserve: 3\n    delay: 1500ms\n", 1),
		turn(done("t1/c")),
		turn(check("c"), done("t3/c")),
	)}
	p, err := fleettest.Publish(f.ctx, f.b, f.caseOf(checkTask("{steps: 6}")), tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleettest.Request(f.ctx, f.b, "it", "steer", p, 1); err != nil {
		t.Fatal(err)
	}
	// Steer while the first turn is in flight.
	for {
		log, err := f.b.LoadRun(f.ctx, "it", "steer")
		if err != nil {
			t.Fatal(err)
		}
		started := false
		for _, fact := range log.Facts() {
			started = started || fact.Kind() == events.KindTurnStarted
		}
		if started {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.b.Controls().Send(f.ctx, "it", "steer", events.Control{Signal: events.SignalSteer,
		Instruction: "Also keep answer.txt ending with a newline."}); err != nil {
		t.Fatal(err)
	}
	log, end, err := fleettest.WaitEnded(f.ctx, f.b, "it", "steer")
	if err != nil {
		t.Fatal(err)
	}
	invariants(t, log)
	ds := decisionsOf(log)
	if len(ds) != 3 {
		t.Fatalf("%d decisions, want 3", len(ds))
	}
	if _, cont := ds[1].Result.Variant().(events.StopContinue); !cont || ds[1].TaskGeneration != 2 {
		t.Fatalf("the proposal citing generation-1 evidence was accepted: %+v (generation %d)", ds[1].Result.Variant(), ds[1].TaskGeneration)
	}
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	gens := 0
	for _, fact := range log.Facts() {
		if g, ok := fact.Body.(events.TaskGenerationStarted); ok && g.Generation == 2 && strings.Contains(g.Instruction, "newline") {
			gens++
		}
	}
	if gens != 1 {
		t.Fatal("no task.generation 2 with the steer's instruction")
	}
}

// A steer sent while the run's final turn is running (the model is
// answering, or the turn's last command runs, and the reply finishes with
// task_complete citing evidence from before the steer) is taken in before
// the turn completes: the finish is stale, the run goes on in the new
// generation, and it ends done only on evidence made after the steer.
func TestSteerDuringTheFinalTurnIsTakenIn(t *testing.T) {
	t.Parallel()
	f := startFleet(t)
	for _, c := range []struct {
		name  string
		final string // the final turn, which proposes done on t1/c
		when  func(events.Fact) bool
	}{
		{"while-the-model-answers",
			strings.Replace(turn(done("t1/c")), "    reserve: 3\n", "    reserve: 3\n    delay: 1500ms\n", 1),
			func(fact events.Fact) bool {
				ts, ok := fact.Body.(events.TurnStarted)
				return ok && ts.Turn == 2
			}},
		{"while-its-last-command-runs",
			turn(`{id: slow, name: run_command, args: {command: "sleep 1.5"}}`, done("t1/c")),
			func(fact events.Fact) bool {
				in, ok := fact.Body.(events.DispatchIntended)
				return ok && in.Turn == 2
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := cases.ParseTreatment("t.yaml", []byte("id: scripted\nmodel: {provider: scripted, scripts: x}\n"))
			if err != nil {
				t.Fatal(err)
			}
			tr.Model.ScriptFiles = map[string]string{"task": script(
				turn(write("w", "4"), check("c")),
				c.final,
				turn(check("c"), done("t3/c")),
			)}
			p, err := fleettest.Publish(f.ctx, f.b, f.caseOf(checkTask("{steps: 6}")), tr)
			if err != nil {
				t.Fatal(err)
			}
			run := "final-" + c.name
			if err := fleettest.Request(f.ctx, f.b, "it", run, p, 1); err != nil {
				t.Fatal(err)
			}
			if err := fleettest.Await(f.ctx, f.b, "it", run, func(l bus.RunLog) bool {
				return slices.ContainsFunc(l.Facts(), c.when)
			}); err != nil {
				t.Fatal(err)
			}
			if err := f.b.Controls().Send(f.ctx, "it", run, events.Control{ID: "steer-" + c.name, Signal: events.SignalSteer,
				Instruction: "Also keep answer.txt ending with a newline."}); err != nil {
				t.Fatal(err)
			}
			log, end, err := fleettest.WaitEnded(f.ctx, f.b, "it", run)
			if err != nil {
				t.Fatal(err)
			}
			invariants(t, log)
			accepted := false
			for _, fact := range log.Facts() {
				if ca, ok := fact.Body.(events.ControlAccepted); ok && ca.Control.ID == "steer-"+c.name {
					accepted = true
				}
			}
			if !accepted {
				t.Fatal("the steer was never accepted")
			}
			ds := decisionsOf(log)
			if len(ds) != 3 {
				t.Fatalf("%d decisions, want 3 (the final turn's finish was decided on pre-steer evidence?)", len(ds))
			}
			if _, cont := ds[1].Result.Variant().(events.StopContinue); !cont {
				t.Fatalf("the finish citing generation-1 evidence was accepted: %+v", ds[1].Result.Variant())
			}
			if end.Status != events.RunDone || ds[2].TaskGeneration != 2 {
				t.Fatalf("ended %s/%q in generation %d", end.Status, end.Reason, ds[2].TaskGeneration)
			}
		})
	}
}
