package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
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
// contained as env.Sandbox says (sandbox.Sandbox.Run: own session,
// resource limits, the attempt's own user and no network where the host
// allows; everything it started is killed when it ends). Output beyond
// outCap bytes is dropped and the result marked truncated. A non-zero exit
// is a COMMAND_FAILED result carrying the output; a timeout or cancel is
// a retryable TIMEOUT. A deadline of ctx that comes before the command's
// own timeout is the run's wall-time budget (the only earlier one the
// runner sets): a command it stops says so, and one whose ctx already
// ended is not started.
func Exec(ctx context.Context, env Env, command string, timeout time.Duration, outCap int) Result {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Result{Err: &events.ToolError{Code: CodeTimeout,
			Message: "command not started: the run's wall-time budget had run out"}}
	}
	deadline, bounded := ctx.Deadline()
	// A second of slack: a caller's bound set just before the command's
	// own equal timeout is no earlier limit.
	budgetFirst := bounded && time.Until(deadline) < timeout-time.Second
	t0 := time.Now()
	run, err := env.Sandbox.Run(ctx, sandbox.Command{
		Script: command, Dir: env.Root.Root(), Env: env.Environ, Timeout: timeout, OutputCap: outCap,
	})
	res := Result{Output: run.Output, Truncated: run.Truncated}
	switch {
	case err != nil:
		res.Err = &events.ToolError{Code: CodeIO, Message: err.Error()}
		return res
	case run.TimedOut:
		reason, until := "timed out after "+timeout.String(), "the "+timeout.String()+" timeout"
		budget := !run.Cancelled && budgetFirst && errors.Is(ctx.Err(), context.DeadlineExceeded)
		switch {
		case run.Cancelled:
			reason = "cancelled"
		case budget:
			// Not the command's timeout: the run has no time left, so
			// trying again cannot help.
			reason = fmt.Sprintf("stopped after %s, before its %s timeout: the run's wall-time budget ran out", time.Since(t0).Round(100*time.Millisecond), timeout)
			until = "the run's wall-time budget ran out"
		}
		msg := "command " + reason + "; it and its children were killed"
		if run.HeldOpen && !run.Cancelled {
			// The command had finished: say whose wait it was and how to
			// avoid it, or the model looks for a hang in its own command.
			msg = fmt.Sprintf("command exited with status %d, but a process it left running in the background kept its output open "+
				"until %s; every process it started was killed (nothing a command starts outlives it). "+
				"Send a background process's output elsewhere (cmd > file 2>&1 &)", run.ExitCode, until)
		}
		res.Err = &events.ToolError{Code: CodeTimeout, Message: msg, Retryable: !budget}
		return res
	}
	code := run.ExitCode
	res.ExitCode = &code
	switch {
	case run.Signal != 0:
		// A limit (CPU time) or the kernel killed it: say which signal.
		res.Err = &events.ToolError{Code: CodeCommandFailed, Message: fmt.Sprintf("killed by signal %d (%v)", int(run.Signal), run.Signal)}
	case code != 0:
		res.Err = &events.ToolError{Code: CodeCommandFailed, Message: fmt.Sprintf("exit status %d", code)}
	}
	return res
}
