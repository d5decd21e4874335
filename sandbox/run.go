package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Command is one command a Sandbox runs.
type Command struct {
	// Script is run with bash -c.
	Script string
	// Dir is the working directory.
	Dir string
	// Env is the command's whole environment. Nil is an empty environment,
	// never the caller's: the caller's keys and tokens must not leak.
	Env []string
	// Timeout bounds the command (zero or less: only ctx does).
	Timeout time.Duration
	// OutputCap bounds the output kept, stdout and stderr together (zero or
	// less: nothing is kept).
	OutputCap int
	// Stdin is written to the command's standard input, which is then
	// closed (empty: end of file at once), in a container as on the host.
	Stdin string
	// HostNetwork keeps the host's network namespace where the
	// containment would give the command a fresh one without network: for
	// an external agent, which must reach its attempt's model endpoint on
	// the host's loopback (docs/agents.md). Containers ignore it: an
	// agent in one reaches its endpoint in the container's own network
	// namespace (Sandbox.ListenInside).
	HostNetwork bool
	// NoAddressSpaceLimit lifts the containment's address-space limit
	// (RLIMIT_AS) for this command, keeping every other: V8 reserves far
	// more address space than it uses (WebAssembly's guard regions), so a
	// Node.js agent cannot even make an HTTP request under it.
	NoAddressSpaceLimit bool
	// EndsAtExit ends the command when its process exits, even while a
	// process it left running holds the output open (which is then
	// killed, as always): for an external agent, whose exit is its end,
	// and whose dev server or build left running in the background would
	// otherwise keep the attempt open until its wall-time budget passed.
	// Without it a command ends once its output is closed too, as a shell
	// capturing its output would wait.
	EndsAtExit bool
	// KeepLast keeps the last OutputCap bytes of the output rather than
	// the first, marked by a first line saying how many came before: for
	// an external agent, whose last words (the traceback it died with)
	// are what its log line is read for.
	KeepLast bool
}

// Result is how a contained command ended.
type Result struct {
	// Output is the output kept; when more was written, a last line says
	// how many bytes were dropped.
	Output string
	// Truncated reports that output was dropped.
	Truncated bool
	// ExitCode is the exit status; for a command killed by a signal it is
	// 128 plus the signal, as bash reports it.
	ExitCode int
	// Signal is the signal that killed the command (a limit, the kernel);
	// zero when it exited.
	Signal syscall.Signal
	// TimedOut reports that the timeout passed or ctx ended before the
	// command did: it and everything it started were killed, and ExitCode
	// and Signal mean nothing.
	TimedOut bool
	// Cancelled reports that it was ctx being cancelled, not a deadline,
	// that ended the command (only with TimedOut).
	Cancelled bool
	// HeldOpen (only with TimedOut) reports that the command itself had
	// exited, with ExitCode, and a process it left running in the
	// background kept the output open until the end: the wait was that
	// process's, which is what the caller should be told.
	HeldOpen bool
}

// Run runs cmd with bash, contained as the sandbox says: in its own
// session (and process group), under the resource limits, as the
// sandbox's user and without network where the host allows. Before the
// command the sandbox's directories are handed to its user. When the
// command ends, times out or ctx ends, the whole session is killed, and
// with it every process of the sandbox's user, also those that left the
// session; a process holding the output open cannot keep Run waiting.
//
// A sandbox of a container (Containment.Container) runs the command in
// it, with the same guarantees.
//
// A nil Sandbox runs the command in its own session with nothing more.
// Run fails only when the command cannot be started or waited for; a
// command that ran and failed is a Result.
func (s *Sandbox) Run(ctx context.Context, cmd Command) (Result, error) {
	if cmd.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cmd.Timeout)
		defer cancel()
	}
	if s != nil && s.ctr != nil {
		return s.runInContainer(ctx, cmd)
	}
	var c *Containment
	if s != nil {
		c = s.c
	}
	if err := s.handOver(); err != nil {
		return Result{}, err
	}
	start, err := s.starter()
	if err != nil {
		return Result{}, fmt.Errorf("start command: %w", err)
	}
	if cmd.NoAddressSpaceLimit && c != nil {
		lifted := *c
		lifted.limits.AddressSpace = 0
		c = &lifted
	}
	argv := c.wrap(cmd.Script)
	proc := exec.Command(argv[0], argv[1:]...)
	proc.Dir = cmd.Dir
	// Never nil: a nil Env would hand the caller's whole environment over.
	proc.Env = append([]string{}, cmd.Env...)
	proc.SysProcAttr = s.sysProcAttr(cmd.HostNetwork)
	if cmd.Stdin != "" {
		proc.Stdin = strings.NewReader(cmd.Stdin)
	}
	sv, err := supervise(ctx, proc, cmd.OutputCap, cmd.KeepLast, cmd.EndsAtExit, start(proc), func() {
		// Whatever the command left running goes too. The session
		// leader's pid is its process group: kill the group, not just
		// bash, and then whatever else the sandbox's user runs.
		_ = syscall.Kill(-proc.Process.Pid, syscall.SIGKILL)
		s.killAll()
	})
	if err != nil {
		return Result{}, fmt.Errorf("start command: %w", err)
	}
	timedOut, waitErr := sv.timedOut, sv.waitErr
	res := Result{Output: sv.output, Truncated: sv.truncated}
	if timedOut {
		res.TimedOut = true
		res.Cancelled = errors.Is(ctx.Err(), context.Canceled)
		if sv.heldOpen {
			res.HeldOpen = true
			var exitErr *exec.ExitError
			if errors.As(waitErr, &exitErr) {
				res.ExitCode = exitErr.ExitCode()
			}
		}
		return res, nil
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		res.ExitCode = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal()
			res.ExitCode = 128 + int(ws.Signal())
		}
		return res, nil
	}
	if waitErr != nil {
		return res, fmt.Errorf("wait for the command: %w", waitErr)
	}
	return res, nil
}

// capBuffer keeps the first max bytes written to it (with last, the last
// max) and counts the rest.
type capBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	last    bool
	dropped int
}

// Write keeps what fits and counts the rest, never failing the command.
func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last {
		n, kept := len(p), p
		if n > c.max {
			c.dropped += n - c.max
			kept = p[n-c.max:]
		}
		c.buf.Write(kept)
		if over := c.buf.Len() - c.max; over > 0 {
			c.buf.Next(over)
			c.dropped += over
		}
		return n, nil
	}
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capBuffer) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.buf.String()
	if c.dropped > 0 && c.last {
		// The cut may have taken a character's first bytes: its others,
		// alone, would read as U+FFFD, which the command never printed.
		n := 0
		for n < len(s) && n < utf8.UTFMax-1 && !utf8.RuneStart(s[n]) {
			n++
		}
		return fmt.Sprintf("[output cut: %d earlier bytes not shown]\n", c.dropped+n) + s[n:], true
	}
	if c.dropped > 0 {
		n := splitAtEnd(s)
		return s[:len(s)-n] + fmt.Sprintf("\n[output cut: %d more bytes not shown]", c.dropped+n), true
	}
	return s, false
}

// splitAtEnd is how many bytes at the end of s begin a character the cut
// after them split: a lead byte and fewer continuation bytes than it
// announces. Invalid bytes are not a split character and are kept.
func splitAtEnd(s string) int {
	for n := 1; n <= min(len(s), utf8.UTFMax-1); n++ {
		b := s[len(s)-n]
		if !utf8.RuneStart(b) {
			continue
		}
		if b >= 0xC0 && !utf8.FullRuneInString(s[len(s)-n:]) {
			return n
		}
		return 0
	}
	return 0
}
