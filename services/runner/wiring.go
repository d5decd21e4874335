package runner

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/models/hosted"
	"github.com/factline/factline/models/scripted"
	"github.com/factline/factline/services/runner/tools"
	"github.com/factline/factline/workspace"
)

// StoredWorkspaces opens attempt workspaces from content-addressed blobs.
type StoredWorkspaces struct {
	Blobs   workspace.Blobs
	Options workspace.Options
}

// Open implements Workspaces.
func (s StoredWorkspaces) Open(ctx context.Context, fixture events.Digest, dir string) (Workspace, error) {
	if fixture == "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		w, err := workspace.Open(ctx, s.Blobs, dir, s.Options)
		if err != nil {
			return nil, err
		}
		return storedWorkspace{w}, nil
	}
	w, err := workspace.Materialise(ctx, s.Blobs, fixture, dir, s.Options)
	if err != nil {
		return nil, err
	}
	return storedWorkspace{w}, nil
}

type storedWorkspace struct{ *workspace.Workspace }

// Refresh rescans the tree. A tree past the workspace's bounds is put back
// as the last scan recorded it (the refused change undone whole), so that
// the run can go on and its candidate can still be sealed; the error stays
// a *workspace.LimitError for the call to fail with.
func (w storedWorkspace) Refresh(ctx context.Context) (bool, error) {
	c, err := w.Workspace.Refresh(ctx)
	if errors.Is(err, workspace.ErrTooLarge) {
		if rerr := w.Workspace.Revert(ctx); rerr != nil {
			return false, fmt.Errorf("%v; undoing it: %w", err, rerr)
		}
	}
	return c.Changed(), err
}

// workspaceLimit is the failed call the model reads when its call took the
// workspace past its bounds: the limit is part of the task, so passing it
// fails the call, not the run (the call's changes were undone by Refresh).
func workspaceLimit(err error) (*events.ToolError, bool) {
	var le *workspace.LimitError
	if !errors.As(err, &le) {
		return nil, false
	}
	return &events.ToolError{Code: tools.CodeTooLarge,
		Message: "this call took the workspace past its limit of " + le.Limit() + "; its changes to the workspace were undone"}, true
}

func (w storedWorkspace) Seal(ctx context.Context) (events.Digest, int, error) {
	d, err := w.Workspace.Seal(ctx)
	if err != nil {
		return "", 0, err
	}
	return d, w.Manifest().Len(), nil
}

// Models builds the model a treatment names: a scripted model from the
// treatment's script for the case, or a hosted API (package hosted:
// Chat Completions, the Responses API, Anthropic Messages) whose key comes
// from the environment.
func Models(ctx context.Context, c *cases.Case, t *cases.Treatment) (models.Model, error) {
	switch t.Model.Provider {
	case cases.ProviderScripted:
		name := c.ID
		if c.Parent != nil {
			// A child run of the case answers from a script of its own.
			name += ".child"
		}
		src, ok := t.Model.ScriptFiles[name]
		if !ok {
			return nil, fmt.Errorf("treatment %s has no script for case %s (add %s.yaml to its scripts)", t.ID, name, name)
		}
		m, err := scripted.Parse(name+".yaml", []byte(src))
		if err != nil {
			return nil, err
		}
		return finiteScript{m}, nil
	}
	if hosted.Is(t.Model.Provider) {
		return hosted.New(t.Model)
	}
	return nil, fmt.Errorf("unknown model provider %q", t.Model.Provider)
}

// finiteScript lets the runner see that a script has no answer left for a
// turn before it reserves budget for it: the script's observations are
// exhausted.
type finiteScript struct{ *scripted.Model }

func (f finiteScript) Exhausted(turn int) bool { return turn > f.Len() }
