package runner_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// A cancel sent before any runner took the run (an operator who changed
// their mind while it queued) is taken in before the first turn: the run
// ends cancelled without a model call or a dispatch. The runner read the
// run's signals only through a watch started beside the first turn, so
// the model was asked and a command started before the cancel arrived
// and interrupted it. A steer sent then is likewise in the task before
// the first turn: it starts the run's second generation first.
func TestSignalsSentBeforeTheClaimAreTakenBeforeTheFirstTurn(t *testing.T) {
	t.Parallel()
	e := start(t)
	script := `turns:
  - calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {id: c, name: run_command, args: {command: ./check.sh}}
      - {id: d, name: task_complete, args: {status: done, evidence: [t1/c]}}
`
	must(t, e.b.Controls().Send(e.ctx, "suite", "queued-cancel", events.Control{Signal: events.SignalCancel, Reason: "not needed after all"}))
	e.start(fixtureCase(t, "{steps: 6}"), script, "queued-cancel")
	log, end := e.wait("queued-cancel")
	if end.Status != events.RunCancelled || !strings.Contains(end.Reason, "not needed after all") {
		t.Fatalf("ended %s/%q, want cancelled with the signal's reason", end.Status, end.Reason)
	}
	for _, f := range log.Facts() {
		switch f.Kind() {
		case events.KindTurnStarted, events.KindModelReplied, events.KindDispatchIntended:
			t.Errorf("%s in a run cancelled before it was claimed", f.Kind())
		}
	}

	must(t, e.b.Controls().Send(e.ctx, "suite", "queued-steer", events.Control{Signal: events.SignalSteer, Instruction: "also keep a copy of the old answer"}))
	e.start(fixtureCase(t, "{steps: 6}"), script, "queued-steer")
	log, _ = e.wait("queued-steer")
	steered := false
	for _, f := range log.Facts() {
		switch f.Body.(type) {
		case events.ControlAccepted:
			steered = true
		case events.TurnStarted:
			if !steered {
				t.Fatal("the first turn started before the steer sent before the claim was taken in")
			}
		}
	}
	if !steered {
		t.Fatal("the steer was never taken in")
	}
}
