package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/factline/factline/events"
)

// commandOutputCap bounds what a command may put in an observation.
const commandOutputCap = 16 << 10

// RunCommand runs a bash command in the workspace.
type RunCommand struct{}

// Contract implements Tool.
func (RunCommand) Contract() Contract {
	return Contract{
		Name: "run_command",
		Description: "Run a bash command with the workspace root as working directory. " +
			"Output (stdout and stderr together) is capped; a command that outlives its timeout is killed with all its children.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["command"],
"properties":{"command":{"type":"string","minLength":1},"timeout_seconds":{"type":"integer","minimum":1,"maximum":600}}}`),
		Effect: events.EffectWrite, Approval: ApprovalNever, Timeout: 10 * time.Minute,
		OutputCap: commandOutputCap, Idempotent: false,
	}
}

// CommandArgs are run_command's arguments.
type CommandArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// DefaultCommandTimeout applies when a call names none.
const DefaultCommandTimeout = 2 * time.Minute

// Run implements Tool.
func (RunCommand) Run(ctx context.Context, env Env, raw json.RawMessage) Result {
	var a CommandArgs
	_ = json.Unmarshal(raw, &a)
	timeout := DefaultCommandTimeout
	if a.TimeoutSeconds > 0 {
		timeout = time.Duration(a.TimeoutSeconds) * time.Second
	}
	return Exec(ctx, env, a.Command, timeout, commandOutputCap)
}

// Exec runs command with bash in the workspace root under a timeout,
// contained as env.Sandbox says: in its own session (and process group),
// under resource limits, as the attempt's own user and without network
// where the host allows. When the time is up or ctx ends, the whole session
// is killed, and with it every process of the attempt's user, also those
// that left the session. Output beyond outCap bytes is dropped and the
// result marked truncated. A non-zero exit is a COMMAND_FAILED result
// carrying the output.
func Exec(ctx context.Context, env Env, command string, timeout time.Duration, outCap int) Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sb := env.Sandbox
	var c *Containment
	if sb != nil {
		c = sb.c
	}
	if err := sb.handOver(); err != nil {
		return Fail(CodeIO, "%v", err)
	}
	argv := c.wrap(command)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = env.Root.Root()
	// Never nil: a nil Env would hand the runner's whole environment over.
	cmd.Env = append([]string{}, env.Environ...)
	cmd.SysProcAttr = sb.sysProcAttr()
	out := &capBuffer{max: outCap}
	// Our own pipe, not exec's: Wait must not hang on a process that left
	// the session and still holds the output open.
	pr, pw, err := os.Pipe()
	if err != nil {
		return Fail(CodeIO, "start command: %v", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return Fail(CodeIO, "start command: %v", err)
	}
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, pr); close(copied) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	kill := func() {
		// The session leader's pid is its process group: kill the group,
		// not just bash, and then whatever else the attempt's user runs.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		sb.killAll()
	}
	var waitErr error
	timedOut := false
	done := false
	for !done {
		select {
		case waitErr = <-exited:
			exited = nil
		case <-copied:
			copied = nil
		case <-ctx.Done():
			timedOut = true
		}
		done = timedOut || (exited == nil && copied == nil)
	}
	// Whatever the command left running goes too.
	kill()
	if exited != nil {
		waitErr = <-exited
	}
	if copied != nil {
		// Everything that held the output is dead; a process that escaped
		// even the kill cannot keep the call open.
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
		}
	}
	pr.Close()
	text, truncated := out.result()
	res := Result{Output: text, Truncated: truncated}
	if timedOut {
		reason := "timed out after " + timeout.String()
		if errors.Is(ctx.Err(), context.Canceled) {
			reason = "cancelled"
		}
		res.Err = &events.ToolError{Code: CodeTimeout, Message: "command " + reason + "; it and its children were killed", Retryable: true}
		return res
	}
	code := 0
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// A limit (CPU time) or the kernel killed it: say which signal.
			code = 128 + int(ws.Signal())
			res.ExitCode = &code
			res.Err = &events.ToolError{Code: CodeCommandFailed, Message: fmt.Sprintf("killed by signal %d (%v)", int(ws.Signal()), ws.Signal())}
			return res
		}
	} else if waitErr != nil {
		res.Err = &events.ToolError{Code: CodeIO, Message: waitErr.Error()}
		return res
	}
	res.ExitCode = &code
	if code != 0 {
		res.Err = &events.ToolError{Code: CodeCommandFailed, Message: fmt.Sprintf("exit status %d", code)}
	}
	return res
}

// capBuffer keeps the first max bytes written to it and counts the rest.
type capBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
	if c.dropped > 0 {
		return s + fmt.Sprintf("\n[output cut: %d more bytes not shown]", c.dropped), true
	}
	return s, false
}
