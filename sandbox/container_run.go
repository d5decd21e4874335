package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// runInContainer runs cmd in the sandbox's container by the engine's exec:
// as the attempt's uid, under the rlimit wrapper (run by the image's
// shell), with the output capped. When the command ends, times out or ctx
// ends, every process of the attempt's uid is killed from the host (the
// container shares the host's uids), which takes the command's process
// group and whatever left it; without a uid of its own the container is
// restarted instead. Either way nothing the command started keeps running.
func (s *Sandbox) runInContainer(ctx context.Context, cmd Command) (Result, error) {
	ctr := s.ctr
	if err := s.handOver(); err != nil {
		return Result{}, err
	}
	args := ctr.execArgs(s.uid, ctr.containerDir(cmd.Dir), containerEnv(cmd.Env))
	if cmd.Stdin != "" {
		// The engine passes its own standard input on only when asked.
		args = slices.Insert(args, 1, "--interactive")
	}
	c := s.c
	if cmd.NoAddressSpaceLimit && c != nil {
		lifted := *c
		lifted.limits.AddressSpace = 0
		c = &lifted
	}
	args = append(args, c.wrapWith(ctr.shell, cmd.Script)...)
	proc := ctr.engine.command(context.WithoutCancel(ctx), args...)
	proc.Dir = ctr.dir
	if cmd.Stdin != "" {
		proc.Stdin = strings.NewReader(cmd.Stdin)
	}
	// The engine's client leads a session of its own, so that it and any
	// helper it forked go together.
	proc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	sv, err := supervise(ctx, proc, cmd.OutputCap, cmd.KeepLast, cmd.EndsAtExit, nil, func() {
		// Kill first what runs in the container, then the engine's
		// client, which then sees its exec end.
		s.sweep(context.WithoutCancel(ctx))
		_ = syscall.Kill(-proc.Process.Pid, syscall.SIGKILL)
	})
	if err != nil {
		return Result{}, fmt.Errorf("start command in container %s: %w", ctr.name, err)
	}
	timedOut, waitErr := sv.timedOut, sv.waitErr
	res := Result{Output: sv.output, Truncated: sv.truncated}
	if timedOut {
		res.TimedOut = true
		res.Cancelled = errors.Is(ctx.Err(), context.Canceled)
		return res, nil
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		res.ExitCode = exitErr.ExitCode()
		// The engine says 125 (and podman 255) for its own failures, as
		// when the container is gone; a command may exit so too, so ask.
		if res.ExitCode == 125 || res.ExitCode == 255 {
			if running, err := ctr.running(context.WithoutCancel(ctx)); err != nil || !running {
				return res, fmt.Errorf("container %s is not running: %s", ctr.name, strings.TrimSpace(tailOf(res.Output, 400)))
			}
		}
		return res, nil
	}
	if waitErr != nil {
		return res, fmt.Errorf("wait for the command in container %s: %w", ctr.name, waitErr)
	}
	return res, nil
}

// sweep kills everything a command left in the container: every process
// of the attempt's uid, from the host, or, without such a uid, by
// restarting the container.
func (s *Sandbox) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if s.uid != 0 {
		if s.killAll() {
			return
		}
		// Something outran the kills (a fork bomb on a loaded host):
		// freeze the container, so nothing in it can fork, send every
		// process of the uid its SIGKILL, and thaw it; they die before
		// running another instruction.
		if _, err := s.ctr.engine.outputIn(ctx, s.ctr.dir, "pause", s.ctr.name); err == nil {
			s.signalAll()
			_, _ = s.ctr.engine.outputIn(ctx, s.ctr.dir, "unpause", s.ctr.name)
		}
		s.killAll()
		return
	}
	if _, err := s.ctr.engine.outputIn(ctx, s.ctr.dir, "restart", "--time", "0", s.ctr.name); err == nil && s.ctr.network == NetworkNone {
		_ = s.ctr.start(ctx)
	}
}

// running reports whether the container is running.
func (ctr *container) running(ctx context.Context) (bool, error) {
	out, err := ctr.engine.output(ctx, "inspect", "--format", "{{.State.Running}}", ctr.name)
	if err != nil {
		return false, err
	}
	return out == "true", nil
}

// tailOf is the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
