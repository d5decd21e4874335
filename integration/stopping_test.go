package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner"
)

func fail(n int, answer string) string { return turn(write("w", answer), check("c")) }

// The stop-and-handoff seed's replay cases, end to end with the real stall
// handler and stop decider: statuses, reasons, steps and spent cost units.
func TestSeedReplayCasesEndToEnd(t *testing.T) {
	t.Parallel()
	f := startFleet(t)
	pass := turn(write("w", "4"), check("c"), done("t%d/c"))
	cases := []struct {
		name, budget, script string
		status               events.RunStatus
		reason               string
		steps                uint32
		cost                 uint64
	}{
		{"repeated failure on an unchanged workspace", "{steps: 6, cost: 12}",
			script(fail(1, "5"), fail(2, "5"), fmt.Sprintf(pass, 3)), events.RunIncomplete, "repeated_failure", 2, 4},
		{"a changed attempt may recover", "{steps: 6, cost: 12}",
			script(fail(1, "5"), fail(2, "6"), fmt.Sprintf(pass, 3)), events.RunDone, "requirements shown", 3, 6},
		{"budget preflight", "{steps: 6, cost: 12}",
			script(fail(1, "5"), fail(2, "6"), fail(3, "7"), fail(4, "8"), fail(5, "9"), fail(6, "10")), events.RunExhausted, runner.ReasonBudgetPreflight, 5, 10},
		{"reservation exceeded", "{steps: 6, cost: 12}",
			script(strings.Replace(fail(1, "5"), "cost: 2", "cost: 4", 1), fail(2, "6")), events.RunExhausted, runner.ReasonReservationExceeded, 1, 4},
		{"step limit", "{steps: 2, cost: 12}",
			script(fail(1, "5"), fail(2, "6"), fail(3, "7")), events.RunExhausted, runner.ReasonStepLimit, 2, 4},
		{"observations exhausted", "{steps: 6, cost: 12}",
			script(fail(1, "5")), events.RunIncomplete, runner.ReasonExhausted, 1, 2},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The seed's controller grants no repair: a pattern stops at once.
			tk := checkTask(c.budget)
			tk.yaml += "stall: {repair_budget: 0}\n"
			log, end := f.run(fmt.Sprintf("seed%d", i), tk, c.script)
			invariants(t, log)
			if end.Status != c.status || !strings.Contains(end.Reason, c.reason) || end.Steps != c.steps {
				t.Fatalf("ended %s/%q after %d steps; want %s/…%s… after %d", end.Status, end.Reason, end.Steps, c.status, c.reason, c.steps)
			}
			if end.Spent.Cost == nil || *end.Spent.Cost != c.cost {
				t.Fatalf("spent %+v, want %d cost units", end.Spent, c.cost)
			}
		})
	}
}

// The "evidence required for adoption" of the harness ownership seed that
// concerns stopping and stalling, each as a scripted run on the bus.
func TestAdoptionEvidence(t *testing.T) {
	t.Parallel()
	f := startFleet(t)
	writeTask := task{files: map[string]string{"answer.txt": "3\n"}, yaml: "budget: {steps: 6}\nrequires_write: true\n"}
	cases := []struct {
		name   string
		task   task
		script string
		check  func(t *testing.T, end events.RunEnded, decisions []events.StopDecision, stalls []events.StallObserved, ds map[string]events.CompletedDispatch)
	}{
		{
			name: "rejected and unchanged edits earn no write credit; an applied one stands despite an ancillary error",
			task: writeTask,
			script: script(
				turn(`{id: same, name: write_file, args: {path: answer.txt, content: "3\n"}}`,
					`{id: bad, name: edit_file, args: {path: answer.txt}}`, done("t1/same")),
				turn(`{id: cmd, name: run_command, args: {command: "echo 4 > answer.txt; false"}}`, done("t2/cmd"))),
			check: func(t *testing.T, end events.RunEnded, ds []events.StopDecision, _ []events.StallObserved, d map[string]events.CompletedDispatch) {
				if _, cont := ds[0].Result.Variant().(events.StopContinue); !cont {
					t.Fatalf("turn 1 had no applied write and was not continued: %+v", ds[0].Result.Variant())
				}
				if d["t2/cmd"].Mutation != events.MutationApplied || end.Status != events.RunDone {
					t.Fatalf("the applied change with a failing exit did not count: %s, run %s/%s", d["t2/cmd"].Mutation, end.Status, end.Reason)
				}
			},
		},
		{
			name: "a failed check survives housekeeping; only an executed pass clears it",
			task: checkTask("{steps: 6}"),
			script: script(
				fail(1, "5"),
				turn(`{id: ls, name: run_command, args: {command: "ls"}}`, done("t2/ls")),
				turn(write("w", "4"), check("c"), done("t3/c"))),
			check: func(t *testing.T, end events.RunEnded, ds []events.StopDecision, _ []events.StallObserved, _ map[string]events.CompletedDispatch) {
				if _, cont := ds[1].Result.Variant().(events.StopContinue); !cont {
					t.Fatalf("a passing housekeeping command stood in for the failed check: %+v", ds[1].Result.Variant())
				}
				if end.Status != events.RunDone {
					t.Fatalf("the executed pass did not clear the failure: %s/%s", end.Status, end.Reason)
				}
			},
		},
		{
			name:   "tool-free turns earn no immunity: they are stopped, incomplete",
			task:   checkTask("{steps: 12}"),
			script: script(fail(1, "5"), strings.Repeat("  - {text: 'Done, surely: it works now.'}\n", 10)),
			check: func(t *testing.T, end events.RunEnded, _ []events.StopDecision, stalls []events.StallObserved, _ map[string]events.CompletedDispatch) {
				if end.Status != events.RunIncomplete || !strings.Contains(end.Reason, "stall") {
					t.Fatalf("idle turns were not stopped: %s/%s", end.Status, end.Reason)
				}
				if end.Steps >= 11 {
					t.Fatalf("idle turns ran on for %d steps", end.Steps)
				}
			},
		},
		{
			name: "cited evidence must exist in the run and be a settled call, not the claim itself",
			task: checkTask("{steps: 6}"),
			script: script(
				turn(write("w", "4"), check("c"), done("t9/nowhere")),
				turn(`{id: done, name: task_complete, args: {status: done, evidence: [t2/done]}}`),
				turn(check("c"), done("t3/c"))),
			check: func(t *testing.T, end events.RunEnded, ds []events.StopDecision, _ []events.StallObserved, _ map[string]events.CompletedDispatch) {
				for i := range 2 {
					c, cont := ds[i].Result.Variant().(events.StopContinue)
					if !cont || c.Feedback == "" {
						t.Fatalf("turn %d's bad citation was accepted: %+v", i+1, ds[i].Result.Variant())
					}
				}
				if end.Status != events.RunDone {
					t.Fatalf("the proper citation did not finish: %s/%s", end.Status, end.Reason)
				}
			},
		},
		{
			name:   "report_blocked ends blocked with the actor's reason and no invented evidence",
			task:   checkTask("{steps: 6}"),
			script: script(turn(`{id: b, name: task_complete, args: {status: blocked, reason: "the check needs a database I cannot reach", unmet: [tests]}}`)),
			check: func(t *testing.T, end events.RunEnded, ds []events.StopDecision, _ []events.StallObserved, _ map[string]events.CompletedDispatch) {
				fin, ok := ds[0].Result.Variant().(events.StopFinish)
				if !ok || fin.Status != events.FinishBlocked || len(fin.Evidence) != 0 || end.Status != events.RunBlocked ||
					!strings.Contains(end.Reason, "database") {
					t.Fatalf("blocked: %+v, run %s/%s", ds[0].Result.Variant(), end.Status, end.Reason)
				}
			},
		},
		{
			name:   "a truthful read-only answer finishes done when no write is required",
			task:   task{files: map[string]string{"notes.txt": "the answer is 42\n"}, yaml: "budget: {steps: 3}\n"},
			script: script(turn(`{id: r, name: read_file, args: {path: notes.txt}}`), "  - {text: The answer is 42.}\n"),
			check: func(t *testing.T, end events.RunEnded, _ []events.StopDecision, _ []events.StallObserved, _ map[string]events.CompletedDispatch) {
				if end.Status != events.RunDone {
					t.Fatalf("read-only answer: %s/%s", end.Status, end.Reason)
				}
			},
		},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, end := f.run(fmt.Sprintf("adopt%d", i), c.task, c.script)
			invariants(t, log)
			c.check(t, end, decisionsOf(log), stallsOf(log), dispatchesOf(log))
		})
	}
}

// A status command polled until its output says ready is polling, not a
// loop; an edit loop whose error text rotates is still stopped by the cap
// on failing verifications.
func TestPollingAndRotatingErrors(t *testing.T) {
	t.Parallel()
	f := startFleet(t)
	t.Run("polling completes", func(t *testing.T) {
		poll := `{id: p, name: run_command, args: {command: "date +%s%N"}}`
		tk := task{files: map[string]string{"job.txt": "running\n"}, yaml: "budget: {steps: 8}\n"}
		log, end := f.run("poll", tk, script(turn(poll), turn(poll), turn(poll), turn(poll), turn(poll),
			turn(`{id: r, name: read_file, args: {path: job.txt}}`, done("t6/r"))))
		invariants(t, log)
		if end.Status != events.RunDone || end.Steps != 6 {
			t.Fatalf("polling was stopped: %s/%s after %d steps", end.Status, end.Reason, end.Steps)
		}
	})
	t.Run("rotating error text is capped", func(t *testing.T) {
		var turns []string
		for i := range 12 {
			turns = append(turns, fail(i+1, fmt.Sprint(10+i)))
		}
		log, end := f.run("rotate", checkTask("{steps: 12}"), script(turns...))
		invariants(t, log)
		if end.Status != events.RunIncomplete || !strings.Contains(end.Reason, "stall") || end.Steps >= 12 {
			t.Fatalf("a loop with rotating errors ran to %d steps: %s/%s", end.Steps, end.Status, end.Reason)
		}
	})
}
