package decider_test

import (
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/services/decider/stop"
)

// The core judges the write requirement by its ID, and the case names it: the
// two must agree or a case needing a write could never be done.
func TestTheCoresWriteRequirementIsTheCasesWriteNeed(t *testing.T) {
	if string(stop.WriteRequirement) != cases.WriteNeedID {
		t.Fatalf("stop.WriteRequirement = %q, cases.WriteNeedID = %q", stop.WriteRequirement, cases.WriteNeedID)
	}
}
