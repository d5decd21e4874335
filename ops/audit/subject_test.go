package audit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/ops/audit"
)

// A subject violation names the run of the subject the message was stored
// under, the message's sequence and what disagreed.
func TestSubjectViolation(t *testing.T) {
	v := audit.SubjectViolation(42, "fact.s1.r1.run.ended", errors.New(`kind is "grade.verdict", the subject says "run.ended"`))
	if v.Suite != "s1" || v.Run != "r1" || v.Rule != audit.RuleFactSubject || !strings.Contains(v.String(), "message 42") ||
		!strings.Contains(v.String(), "grade.verdict") {
		t.Fatalf("%+v", v)
	}
	if v := audit.SubjectViolation(1, "odd", errors.New("x")); v.Suite != "?" || v.Run != "?" {
		t.Fatalf("%+v", v)
	}
}
