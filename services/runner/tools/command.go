package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Exec runs command with bash in the workspace root under a timeout, in its
// own process group so that the whole group is killed when the time is up
// or ctx ends. Output beyond outCap bytes is dropped and the result marked
// truncated. A non-zero exit is a COMMAND_FAILED result carrying the output.
func Exec(ctx context.Context, env Env, command string, timeout time.Duration, outCap int) Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = env.Root.Root()
	cmd.Env = env.Environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &capBuffer{max: outCap}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return Fail(CodeIO, "start command: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	timedOut := false
	select {
	case err = <-done:
	case <-ctx.Done():
		// Kill the group, not just bash: children must not outlive the call.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		timedOut = true
	}
	// Whatever the command left running in its group goes too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
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
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		res.Err = &events.ToolError{Code: CodeIO, Message: err.Error()}
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
