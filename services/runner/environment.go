package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/factline/factline/sandbox"
)

// sandbox makes the attempt's sandbox: a container of the case's
// environment when it (or its treatment) names one, else contained host
// processes. A container is named from the run and this lease; the
// containers earlier leases left on this host (a runner that died
// mid-attempt) are removed first, so a takeover never leaves one behind.
// An image the engine does not hold is bad input: the run ends errored
// naming it before any command runs.
func (a *attempt) sandbox(ctx context.Context, home, tmp string) (*sandbox.Sandbox, error) {
	c := a.svc.containment
	env := a.eff.Environment
	if env == nil {
		return c.ForAttempt(a.ws.Root(), home, tmp), nil
	}
	labels := map[string]string{sandbox.LabelSuite: a.suite, sandbox.LabelRun: a.run}
	removed, err := c.RemoveContainers(ctx, labels)
	if err != nil {
		return nil, fmt.Errorf("remove the run's earlier containers: %w", err)
	}
	if len(removed) > 0 {
		a.svc.log.Info("removed the containers of earlier leases", "suite", a.suite, "run", a.run, "containers", removed)
	}
	labels[sandbox.LabelLease] = strconv.FormatUint(uint64(a.lease), 10)
	sb, err := c.Container(ctx, sandbox.ContainerSpec{
		Name: sandbox.ContainerName(a.suite, a.run, a.lease), Labels: labels, Env: env.Sandbox(),
		Workspace: a.ws.Root(), Home: home, Tmp: tmp,
	})
	if errors.Is(err, sandbox.ErrImageMissing) {
		return nil, fmt.Errorf("%w: %v", errBadInput, err)
	}
	return sb, err
}

// closeSandbox removes the attempt's container, if it has one.
func (a *attempt) closeSandbox() {
	if err := a.env.Sandbox.Close(context.Background()); err != nil {
		a.svc.log.Warn("removing the attempt's container failed", "suite", a.suite, "run", a.run, "err", err)
	}
}

// siteKind names the runners' directories in a work dir.
const siteKind = "runner"

// reap removes what dead runners left in the work dir: their attempts'
// directories, processes, leftover files and containers
// (sandbox.Reap). It runs when a runner starts and before each attempt,
// so that a takeover on this host never leaves the dead runner's behind.
// Failing to reap is logged, never fatal: the attempt itself is sound.
func (s *Service) reap(ctx context.Context) {
	r, err := sandbox.Reap(ctx, s.workDir, siteKind, s.engine)
	if !r.Empty() {
		s.log.Info("removed what dead runners left", "dirs", r.Dirs, "containers", r.Containers, "processes", r.Processes, "files", r.Files)
	}
	if err != nil {
		s.log.Warn("removing what dead runners left failed", "err", err)
	}
}
