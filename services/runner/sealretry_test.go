package runner_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// flakySealing opens stored workspaces whose first Seal fails the way a
// blob put does while a NATS node restarts.
type flakySealing struct {
	runner.StoredWorkspaces
	failed atomic.Bool
}

func (f *flakySealing) Open(ctx context.Context, fixture events.Digest, dir string) (runner.Workspace, error) {
	w, err := f.StoredWorkspaces.Open(ctx, fixture, dir)
	if err != nil {
		return nil, err
	}
	return flakyWorkspace{Workspace: w, f: f}, nil
}

type flakyWorkspace struct {
	runner.Workspace
	f *flakySealing
}

func (w flakyWorkspace) Seal(ctx context.Context) (events.Digest, int, error) {
	if w.f.failed.CompareAndSwap(false, true) {
		return "", 0, fmt.Errorf("seal: store manifest: put blob: %w", context.DeadlineExceeded)
	}
	return w.Workspace.Seal(ctx)
}

// A seal that fails because the bus did (a blob put timing out while a
// server restarts) is tried again; it does not end the run errored. Only
// a failure of the workspace itself does that.
func TestASealTheBusFailedIsTriedAgain(t *testing.T) {
	t.Parallel()
	ws := &flakySealing{}
	e := startTuned(t, func(b *bus.Bus) []kit.Option {
		ws.StoredWorkspaces = runner.StoredWorkspaces{Blobs: b.Blobs()}
		return []kit.Option{runner.WithWorkspaces(ws)}
	}, nil)
	pass := `  - calls:
      - {name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {name: run_command, args: {command: ./check.sh}}
      - {name: task_complete, args: {status: done, evidence: [t1/call-1-2]}}
`
	log, end := e.run(fixtureCase(t, "{steps: 4}"), script(pass), "seal-retry")
	if !ws.failed.Load() {
		t.Fatal("the seal never failed: the test tested nothing")
	}
	if end.Status != events.RunDone {
		t.Fatalf("the run ended %s (%s), want done", end.Status, end.Reason)
	}
	if n := len(kinds(log, events.KindCandidateSealed)); n != 1 {
		t.Fatalf("%d candidate.sealed, want 1", n)
	}
}
