package staller_test

import (
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/services/staller/stall"
)

// The core judges the write requirement by its ID, and the case names it: the
// two must agree or a case needing a write could never be done.
func TestTheCoresWriteRequirementIsTheCasesWriteNeed(t *testing.T) {
	if string(stall.WriteRequirement) != cases.WriteNeedID {
		t.Fatalf("stall.WriteRequirement = %q, cases.WriteNeedID = %q", stall.WriteRequirement, cases.WriteNeedID)
	}
}
