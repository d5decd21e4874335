package runner

import "github.com/factline/factline/services/runner/step"

// Stop reasons for the limits the runner enforces. A spent budget ends a
// run exhausted (step.Exhausted), never as an error: running out is an
// honest ending. A script that has no more replies ends it incomplete: no
// budget ran out. The budget's own reasons are decided by the core
// (package step).
const (
	ReasonStepLimit           = step.ReasonStepLimit
	ReasonBudgetPreflight     = step.ReasonBudgetPreflight
	ReasonReservationExceeded = step.ReasonReservationExceeded
	ReasonInputTokenLimit     = step.ReasonInputTokenLimit
	ReasonOutputTokenLimit    = step.ReasonOutputTokenLimit
	ReasonWallLimit           = step.ReasonWallLimit
	ReasonExhausted           = "observations_exhausted"
)
