package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"time"
)

// supervised is what supervise saw of a command.
type supervised struct {
	output    string
	truncated bool
	waitErr   error // proc.Wait's
	timedOut  bool  // ctx ended first
	// heldOpen (with timedOut): the process had exited, and what it left
	// running kept the output open until ctx ended.
	heldOpen bool
}

// supervise starts proc with its output on a pipe of our own (not exec's:
// Wait must not hang on a process that left the session and still holds
// the output open), collects up to outCap bytes of it (the first, or with
// keepLast the last), and waits until the process has exited and the
// output closed (with atExit, only until the process has exited), or ctx
// ends. Then kill removes whatever the command left running (both backends kill the process group
// and the sandbox user's other processes, in their own order), and the
// output is drained for at most two seconds: a process that escaped even
// the kill cannot keep the call open. An error is returned only when proc
// cannot be started.
//
// start, when not nil, starts proc (on the thread of the attempt's mount
// namespace); nil is proc.Start.
func supervise(ctx context.Context, proc *exec.Cmd, outCap int, keepLast, atExit bool, start func() error, kill func()) (supervised, error) {
	out := &capBuffer{max: max(outCap, 0), last: keepLast}
	pr, pw, err := os.Pipe()
	if err != nil {
		return supervised{}, err
	}
	proc.Stdout, proc.Stderr = pw, pw
	if start == nil {
		start = proc.Start
	}
	err = start()
	pw.Close()
	if err != nil {
		pr.Close()
		return supervised{}, err
	}
	defer pr.Close()
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, pr); close(copied) }()
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()

	var s supervised
	for done := false; !done; done = s.timedOut || (exited == nil && (copied == nil || atExit)) {
		select {
		case s.waitErr = <-exited:
			exited = nil
		case <-copied:
			copied = nil
		case <-ctx.Done():
			s.timedOut = true
			s.heldOpen = exited == nil
		}
	}
	kill()
	if exited != nil {
		s.waitErr = <-exited
	}
	if copied != nil {
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
		}
	}
	s.output, s.truncated = out.result()
	return s, nil
}
