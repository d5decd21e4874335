package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/workspace"
)

// A runner takes a run over while the attempt that holds it is only slow:
// between the takeover's read of the log and its claim, the holder settles
// a write. The takeover must go on from the workspace the log settled
// before its claim, not from the one it read first (which would lose the
// write, fail the check and end the run otherwise than without the race).
func TestTakeoverResumesFromWhatSettledBeforeItsClaim(t *testing.T) {
	c := fixtureCase(t, "{steps: 6}")
	args := `{"path":"answer.txt","content":"4\n"}`
	var once sync.Once
	hooked := false
	e := startTuned(t, nil, func(svc *runner.Service, b *bus.Bus) {
		runner.SetBeforeClaim(t, svc, func(ctx context.Context, suite, run string) {
			once.Do(func() {
				hooked = true
				settleWriteAsOther(t, ctx, b, suite, run, c.Fixture, args)
			})
		})
	})
	b, ctx := e.b, e.ctx

	s := "turns:\n  - calls:\n      - {id: w, name: write_file, args: {path: answer.txt, content: \"4\\n\"}}\n  - text: done\n"
	p, err := fleettest.Publish(ctx, b, c, treatment(t, s))
	must(t, err)
	must(t, fleettest.Request(ctx, b, "suite", "race", p, 1))
	log, end, err := fleettest.WaitEnded(ctx, b, "suite", "race")
	must(t, err)
	if !hooked {
		t.Fatal("the runner never reached its claim")
	}
	var sealed *events.CandidateSealed
	var leases []uint32
	for _, f := range log.Facts() {
		switch b := f.Body.(type) {
		case events.CandidateSealed:
			sealed = &b
		case events.RunClaimed:
			leases = append(leases, b.Lease)
		}
	}
	if len(leases) != 2 || leases[1] != 2 {
		t.Fatalf("claims with leases %v, want the other attempt's 1 and then 2", leases)
	}
	if sealed == nil {
		t.Fatalf("the run ended %s (%s) without a sealed candidate", end.Status, end.Reason)
	}
	dir := filepath.Join(t.TempDir(), "candidate")
	if _, err := workspace.Materialise(ctx, b.Blobs(), sealed.SnapshotDigest, dir, workspace.Options{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "answer.txt"))
	must(t, err)
	if string(got) != "4\n" {
		t.Fatalf("the candidate's answer.txt is %q, want the settled write's %q (run ended %s: %s)", got, "4\n", end.Status, end.Reason)
	}
}

// settleWriteAsOther commits, as another runner holding lease 1, turn 1 up
// to a settled write of answer.txt, with the workspace that write left
// stored as blobs.
func settleWriteAsOther(t *testing.T, ctx context.Context, b *bus.Bus, suite, run, fixture, args string) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.CopyFS(dir, os.DirFS(fixture)))
	must(t, os.WriteFile(filepath.Join(dir, "answer.txt"), []byte("4\n"), 0o644))
	m, err := workspace.Store(ctx, b.Blobs(), dir, workspace.Options{})
	must(t, err)
	call := events.ToolCall{ID: "w", Name: "write_file", Args: args, ArgsDigest: events.DigestOf([]byte(args))}
	bodies := []events.Body{
		events.RunClaimed{Runner: "other", Lease: 1},
		events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("other's request"))},
		events.ModelReplied{Turn: 1, Provider: "scripted", Model: "script", Calls: []events.ToolCall{call}},
		events.DispatchIntended{Turn: 1, CallID: "w", Tool: "write_file", OperationID: run + "/t1/w", ArgsDigest: call.ArgsDigest, Effect: events.EffectWrite},
		events.DispatchCompleted{Turn: 1, Output: "wrote answer.txt", Dispatch: events.CompletedDispatch{
			CallID: "w", EvidenceRef: "t1/w", Disposition: events.DispositionExecuted, Mutation: events.MutationApplied,
			Verification: events.NotVerifier(), Tool: "write_file", Digest: m.Digest()}},
	}
	for _, body := range bodies {
		_, err := b.Commit(ctx, nil, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
			f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: log.NextPosition(),
				Producer: events.Producer{Service: events.OwnerRunner, Instance: "other"}}, body)
			return []bus.Pending{{Fact: f}}, err
		})
		must(t, err)
	}
}
