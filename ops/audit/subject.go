package audit

import (
	"fmt"
	"strings"
)

// RuleFactSubject is the invariant that every stored message holds the
// fact its subject names: the same kind, suite and run. The server grants
// publishing per subject, so a fact that disagrees with its subject (a
// grade.verdict on a runner's run.ended subject) was written by an
// identity that may not write it; every reader leaves it out, and the
// audit names it.
const RuleFactSubject = "fact-subject"

// SubjectViolation is the violation for the message at stream sequence
// seq, stored under subject, whose fact does not match it; err says how
// (an events.SubjectMismatchError). The suite and run are the subject's:
// the run the forgery was put into.
func SubjectViolation(seq uint64, subject string, err error) Violation {
	suite, run := "?", "?"
	if parts := strings.SplitN(subject, ".", 4); len(parts) == 4 {
		suite, run = parts[1], parts[2]
	}
	return Violation{Suite: suite, Run: run, Rule: RuleFactSubject, Detail: fmt.Sprintf("message %d: %v", seq, err)}
}
