package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

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

// Refresh rescans the tree. A tree past the workspace's bounds, or holding
// what a snapshot cannot record (a named pipe, a socket, a device), is put
// back as the last scan recorded it (the refused change undone whole), so
// that the run can go on and its candidate can still be sealed; the error
// stays a *workspace.LimitError or *workspace.PathError for the call to
// fail with.
func (w storedWorkspace) Refresh(ctx context.Context) (bool, error) {
	c, err := w.Workspace.Refresh(ctx)
	if errors.Is(err, workspace.ErrTooLarge) || errors.Is(err, workspace.ErrUnsupported) {
		if rerr := w.Workspace.Revert(ctx); rerr != nil {
			return false, fmt.Errorf("%v; undoing it: %w", err, rerr)
		}
	}
	return c.Changed(), err
}

// workspaceLimit is the failed call the model reads when its call took the
// workspace past its bounds: the limit is part of the task, so passing it
// fails the call, not the run (the call's changes were undone by Refresh).
// A call that left a named pipe, a socket or a device in the workspace
// fails the same way: that too is the agent's doing, and its changes were
// undone as well.
func workspaceLimit(err error) (*events.ToolError, bool) {
	var le *workspace.LimitError
	var pe *workspace.PathError
	switch {
	case errors.As(err, &le):
		return &events.ToolError{Code: tools.CodeTooLarge,
			Message: "this call took the workspace past its limit of " + le.Limit() + "; its changes to the workspace were undone"}, true
	case errors.As(err, &pe) && errors.Is(err, workspace.ErrUnsupported):
		// The reason says what the entry is; what follows its comma is
		// advice for Go callers of the workspace package.
		what, _, _ := strings.Cut(pe.Reason, ",")
		return &events.ToolError{Code: tools.CodeIO,
			Message: fmt.Sprintf("this call left %q in the workspace, which %s: a workspace snapshot records only files, directories and symlinks, so the call's changes to the workspace were undone (make pipes and sockets outside it, in $TMPDIR, or remove them before the command ends)", pe.Path, what)}, true
	}
	return nil, false
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
