package runner_test

import (
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/runner/tools"
	"github.com/factline/factline/workspace"
)

// The workspace limit is part of the task. A call that writes past it is a
// failed call (TOO_LARGE, its changes undone), not a harness error: the run
// goes on, and the candidate is sealed and judged like any other.
func TestWritingPastTheWorkspaceLimitIsACandidateFailure(t *testing.T) {
	t.Parallel()
	e := startTuned(t, func(b *bus.Bus) []kit.Option {
		return []kit.Option{runner.WithWorkspaces(runner.StoredWorkspaces{Blobs: b.Blobs(), Options: workspace.Options{MaxBytes: 4 << 10}})}
	}, nil)
	overflow := `  - calls:
      - {id: big, name: run_command, args: {command: "echo 4 > answer.txt && head -c 100000 /dev/zero > big.bin"}}
`
	t.Run("the run goes on", func(t *testing.T) {
		log, end := e.run(fixtureCase(t, "{steps: 6}"), script(overflow, `  - calls:
      - {id: look, name: read_file, args: {path: big.bin}}
      - {id: answer, name: read_file, args: {path: answer.txt}}
      - {id: w, name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {id: check, name: run_command, args: {command: ./check.sh}}
  - calls:
      - {id: done, name: task_complete, args: {status: done, evidence: [t2/check]}}
`), "too-large-goes-on")
		if end.Status != events.RunDone {
			t.Fatalf("ended %s (%s), want done", end.Status, end.Reason)
		}
		ds := dispatches(log)
		big := ds["t1/big"]
		if big.Error == nil || big.Error.Code != tools.CodeTooLarge || big.Dispatch.Mutation != events.MutationNotApplied {
			t.Fatalf("the overflowing call: %+v, want TOO_LARGE and not applied", big)
		}
		if !strings.Contains(big.Output, "at most 4096 bytes") || !strings.Contains(big.Output, "undone") {
			t.Errorf("the observation %q does not say the limit and that the call was undone", big.Output)
		}
		// Undone whole: the file past the limit and the call's other change.
		if d := ds["t2/look"]; d.Error == nil || d.Error.Code != tools.CodeNotFound {
			t.Errorf("big.bin after the refused call: %+v", d)
		}
		if d := ds["t2/answer"]; !strings.Contains(d.Output, "3") {
			t.Errorf("answer.txt after the refused call: %q", d.Output)
		}
		if len(kinds(log, events.KindCandidateSealed)) != 1 {
			t.Fatal("no sealed candidate")
		}
	})
	t.Run("the run ends on it", func(t *testing.T) {
		log, end := e.run(fixtureCase(t, "{steps: 6}"), script(overflow), "too-large-ends")
		if end.Status == events.RunErrored || strings.HasPrefix(end.Reason, "harness") {
			t.Fatalf("ended %s (%s): a candidate that writes past the limit is not a harness error", end.Status, end.Reason)
		}
		sealed := kinds(log, events.KindCandidateSealed)
		if len(sealed) != 1 || sealed[0].Body.(events.CandidateSealed).SnapshotDigest == "" {
			t.Fatal("the candidate was not sealed")
		}
		if d := dispatches(log)["t1/big"]; d.Error == nil || d.Error.Code != tools.CodeTooLarge {
			t.Fatalf("the overflowing call: %+v", d)
		}
	})
}
