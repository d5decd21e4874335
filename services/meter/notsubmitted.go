package meter

import "fmt"

// NotSubmittedError is a suite the log holds no suite.submitted of: a
// name mistyped, or looked for in another store. A caller that can list
// the suites the log does hold (bus.SubmittedSuites) adds them.
type NotSubmittedError struct{ Suite string }

func (e *NotSubmittedError) Error() string {
	return fmt.Sprintf("suite %s was never submitted: this log has no suite.submitted of it", e.Suite)
}
