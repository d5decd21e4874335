package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// unwrittenError is what of a measured suite's files run could not write
// after the run (--out's, --junit's): a disk that filled, a directory
// removed since checkOutputs passed it. The report stands, so the gates
// are still held to it (docs/cli.md#exit-status): a CI job learns
// whether the agent passed them, and that its artifacts are missing.
type unwrittenError struct {
	files []error // one for each file not written, naming it and why
}

func (e *unwrittenError) Error() string {
	msgs := make([]string, len(e.files))
	for i, err := range e.files {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap keeps each file's cause matchable.
func (e *unwrittenError) Unwrap() []error { return e.files }

// unwritten returns an *unwrittenError of the files not written, nil when
// every one was.
func unwritten(files []error) error {
	if len(files) == 0 {
		return nil
	}
	return &unwrittenError{files: files}
}

// withUnwritten is how a measured suite whose files could not all be
// written ends the command. The verdict on the suite wins (a gate that
// failed, 3; a suite not complete, 4; all harness errors, 5): stderr says
// first which files were not written, then the verdict says why it
// exits. With no such verdict the job still fails, exit 1, since the
// artifacts it asked for are missing, and says what the gates held.
func withUnwritten(verdict error, files *unwrittenError, gates int, errOut io.Writer) error {
	if files == nil {
		return verdict
	}
	var ee *exitError
	if errors.As(verdict, &ee) {
		for _, f := range files.files {
			fmt.Fprintf(errOut, "%v\n", f)
		}
		return verdict
	}
	held := "every gate holds"
	if gates == 0 {
		held = "no gate was given"
	}
	return fmt.Errorf("%w (the suite was measured and %s)", files, held)
}
