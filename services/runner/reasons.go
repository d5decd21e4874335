package runner

import "github.com/factline/factline/services/runner/step"

// Stop reasons for the limits the runner enforces. They end a run
// incomplete, never as an error: running out is an honest ending. The
// budget's own reasons are decided by the core (package step).
const (
	ReasonStepLimit           = step.ReasonStepLimit
	ReasonBudgetPreflight     = step.ReasonBudgetPreflight
	ReasonReservationExceeded = step.ReasonReservationExceeded
	ReasonInputTokenLimit     = step.ReasonInputTokenLimit
	ReasonOutputTokenLimit    = step.ReasonOutputTokenLimit
	ReasonWallLimit           = "wall_time_limit"
	ReasonExhausted           = "observations_exhausted"
)
