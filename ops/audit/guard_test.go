package audit

import (
	"testing"

	"github.com/factline/factline/internal/testutil"
)

// The audit is a pure function of the facts, so it runs the same on a
// live stream, an export or a test's log: it imports the vocabulary and
// the pure cores of the owners whose decisions it re-derives (the runner's
// step, the grader's grade, the meter's measure), which import no NATS and
// do no I/O themselves, and nothing of the standard library that does I/O.
// Never a service's shell: the audit must not decide with the code of the
// process it checks, only with its rules.
func TestTheAuditImportsOnlyTheVocabularyAndPureCores(t *testing.T) {
	testutil.CheckPureCore(t,
		testutil.Module+"events",
		testutil.Module+"services/runner/step",
		testutil.Module+"services/grader/grade",
		testutil.Module+"services/meter/measure",
	)
}
