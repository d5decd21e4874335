package events

// SuiteAction is what an operator does to a whole suite
// (docs/controls.md#suites).
type SuiteAction string

// The suite actions.
const (
	// SuitePause: no new attempt starts, and running ones hold at their
	// next turn boundary, until a resume.
	SuitePause SuiteAction = "pause"
	// SuiteResume ends a pause.
	SuiteResume SuiteAction = "resume"
	// SuiteDrain: no new attempt starts; running ones finish.
	SuiteDrain SuiteAction = "drain"
	// SuiteCancel: no new attempt starts; running ones end cancelled.
	SuiteCancel SuiteAction = "cancel"
)

var suiteActions = []SuiteAction{SuitePause, SuiteResume, SuiteDrain, SuiteCancel}

// SuiteActions lists every suite action.
func SuiteActions() []SuiteAction { return append([]SuiteAction(nil), suiteActions...) }

// The run.ended reasons of a run its runner did not start because its
// suite was drained or cancelled; a cancelled suite's running runs end
// with ReasonSuiteCancelled as their reason's prefix, then the operator's
// reason.
const (
	ReasonSuiteDrained   = "suite_drained"
	ReasonSuiteCancelled = "suite_cancelled"
)

// SuiteControlled (suite.controlled, suite-scoped) is an operator's control
// of a whole suite, accepted: who (From), why (Reason) and, in the
// envelope, when. ID names the control (the command that sent it waits
// for it). It is accepted only for a submitted suite not yet reported,
// and only where the suite's state allows it (package projections,
// SuiteControl.Accept).
type SuiteControlled struct {
	ID     string      `msgpack:"id"`
	Action SuiteAction `msgpack:"action"`
	From   string      `msgpack:"from"`
	Reason string      `msgpack:"reason,omitempty"`
}

// Kind implements Body.
func (SuiteControlled) Kind() Kind { return KindSuiteControlled }

func (b SuiteControlled) validate(p string) error {
	if err := needString(p, "id", b.ID); err != nil {
		return err
	}
	if err := needOneOf(p, "action", b.Action, suiteActions); err != nil {
		return err
	}
	return needString(p, "from", b.From)
}
