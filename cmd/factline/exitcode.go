package main

import "fmt"

// The exit statuses a CI job tells apart (docs/cli.md#exit-status), beyond
// 0 (success), 1 (the command failed) and 2 (a usage or file mistake).
const (
	// exitGateFailed: the suite was measured and a gate (--fail-under,
	// --fail-if-worse) does not hold.
	exitGateFailed = 3
	// exitIncomplete: the suite could not be measured to its end (gave
	// up at --timeout, or its report is not complete).
	exitIncomplete = 4
	// exitAllHarnessErrors: every planned attempt ended as a harness
	// error: the suite measured the harness, not the agent.
	exitAllHarnessErrors = 5
)

// exitError ends a command with a status of its own: what it says goes to
// stderr, like any error's.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// Unwrap keeps the cause matchable.
func (e *exitError) Unwrap() error { return e.err }

// exitWith makes err end the command with status code.
func exitWith(code int, format string, a ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, a...)}
}
