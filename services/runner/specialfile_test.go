package runner_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/runner/tools"
)

// A workspace snapshot cannot record a named pipe or a socket. A command
// that leaves one in the workspace is the agent's doing, like writing past
// the workspace limit: the call fails (IO_ERROR, naming the path, its
// changes undone whole) and the run goes on to a sealed candidate. It
// once ended the run errored, a harness error, excluded from the figures.
func TestACommandLeavingANamedPipeFailsTheCallNotTheRun(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	log, end := e.run(fixtureCase(t, "{steps: 6}"), script(`  - calls:
      - {id: fifo, name: run_command, args: {command: "echo 4 > answer.txt && mkfifo pipe"}}
`, `  - calls:
      - {id: answer, name: read_file, args: {path: answer.txt}}
      - {id: w, name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {id: check, name: run_command, args: {command: ./check.sh}}
  - calls:
      - {id: done, name: task_complete, args: {status: done, evidence: [t2/check]}}
`), "fifo")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done", end.Status, end.Reason)
	}
	ds := dispatches(log)
	fifo := ds["t1/fifo"]
	if fifo.Error == nil || fifo.Error.Code != tools.CodeIO || fifo.Dispatch.Mutation != events.MutationNotApplied {
		t.Fatalf("the call that left a pipe: %+v, want IO_ERROR and not applied", fifo)
	}
	for _, want := range []string{`"pipe"`, "named pipe", "undone"} {
		if !strings.Contains(fifo.Error.Message, want) {
			t.Errorf("the message %q does not say %s", fifo.Error.Message, want)
		}
	}
	// Undone whole: the call's other change too.
	if d := ds["t2/answer"]; !strings.Contains(d.Output, "3") {
		t.Errorf("answer.txt after the refused call: %q", d.Output)
	}
	if len(kinds(log, events.KindCandidateSealed)) != 1 {
		t.Fatal("no sealed candidate")
	}
}
