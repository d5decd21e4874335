package projections

import (
	"errors"
	"fmt"
	"time"

	"github.com/factline/factline/events"
)

// SuiteState is where an operator's controls have left a suite
// (docs/controls.md#suites).
type SuiteState string

// The suite states.
const (
	// SuiteActive: no control, or a resume after a pause.
	SuiteActive SuiteState = "active"
	// SuitePaused: no attempt starts; running ones hold at their next
	// turn boundary.
	SuitePaused SuiteState = "paused"
	// SuiteDrained: no attempt starts; running ones finish.
	SuiteDrained SuiteState = "drained"
	// SuiteCancelled: no attempt starts; running ones end cancelled.
	SuiteCancelled SuiteState = "cancelled"
)

// Control is one accepted suite.controlled with when it was committed.
type Control struct {
	events.SuiteControlled
	At time.Time `json:"at"`
}

// SuiteControl is the fold of a suite's suite-scoped facts that the
// controls over a whole suite decide from: whether it was submitted and
// reported, and its state after every accepted control.
type SuiteControl struct {
	Suite     string     `json:"suite"`
	Submitted bool       `json:"submitted"`
	Reported  bool       `json:"reported"`
	State     SuiteState `json:"state"`
	// Controls are the suite's accepted controls, in log order.
	Controls []Control `json:"controls,omitempty"`
}

// FoldSuiteControl folds a suite's facts (its suite-scoped ones; others
// are passed over) in log order.
func FoldSuiteControl(suite string, facts []events.Fact) SuiteControl {
	c := SuiteControl{Suite: suite, State: SuiteActive}
	for _, f := range facts {
		c.Apply(f)
	}
	return c
}

// Apply folds one fact.
func (c *SuiteControl) Apply(f events.Fact) {
	if c.State == "" {
		c.State = SuiteActive
	}
	switch b := f.Body.(type) {
	case events.SuiteSubmitted:
		c.Submitted = true
	case events.SuiteReported:
		c.Reported = true
	case events.SuiteControlled:
		c.Controls = append(c.Controls, Control{SuiteControlled: b, At: f.At})
		if next, err := transition(c.State, b.Action); err == nil {
			c.State = next
		}
	}
}

// Last is the control that set the suite's state (nil for a suite never
// controlled).
func (c SuiteControl) Last() *Control {
	if len(c.Controls) == 0 {
		return nil
	}
	return &c.Controls[len(c.Controls)-1]
}

// Has reports whether the control named id was accepted.
func (c SuiteControl) Has(id string) bool {
	for _, x := range c.Controls {
		if x.ID == id {
			return true
		}
	}
	return false
}

// Errors a control of a suite is refused with (errors.Is).
var (
	// ErrSuiteUnknown: the log holds no suite.submitted of the suite.
	ErrSuiteUnknown = errors.New("no such suite")
	// ErrSuiteReported: the suite's report is in (suite.reported).
	ErrSuiteReported = errors.New("the suite is already reported")
	// ErrSuiteState: the suite's state does not allow the action.
	ErrSuiteState = errors.New("the suite's state does not allow it")
)

// ControlError is a refused control of a suite: which suite, which
// action, the state it was in and why (Err, one of the errors above).
type ControlError struct {
	Suite  string
	Action events.SuiteAction
	State  SuiteState
	Detail string
	Err    error
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("suite %s: %s refused: %s", e.Suite, e.Action, e.Detail)
}

func (e *ControlError) Unwrap() error { return e.Err }

// Accept decides whether action may be applied to the suite now. It is the
// only check: the command appends suite.controlled only when it passes on
// the suite's facts as they are at the append.
func (c SuiteControl) Accept(action events.SuiteAction) error {
	refuse := func(err error, format string, args ...any) error {
		return &ControlError{Suite: c.Suite, Action: action, State: c.State, Detail: fmt.Sprintf(format, args...), Err: err}
	}
	if !c.Submitted {
		return refuse(ErrSuiteUnknown, "the log holds no suite %s (no suite.submitted)", c.Suite)
	}
	if c.Reported {
		return refuse(ErrSuiteReported, "suite %s is already reported: every planned attempt is settled, nothing is left to control", c.Suite)
	}
	if _, err := transition(c.State, action); err != nil {
		return refuse(ErrSuiteState, "%v", err)
	}
	return nil
}

// transition is the state an action leaves a suite in.
func transition(from SuiteState, action events.SuiteAction) (SuiteState, error) {
	switch from {
	case SuiteCancelled:
		return from, fmt.Errorf("the suite is cancelled: nothing of it runs again")
	case SuiteDrained:
		if action == events.SuiteCancel {
			return SuiteCancelled, nil
		}
		return from, fmt.Errorf("the suite is drained: no attempt of it starts again (cancel ends the running ones)")
	}
	switch action {
	case events.SuitePause:
		if from == SuitePaused {
			return from, fmt.Errorf("the suite is already paused")
		}
		return SuitePaused, nil
	case events.SuiteResume:
		if from != SuitePaused {
			return from, fmt.Errorf("the suite is not paused (it is %s)", from)
		}
		return SuiteActive, nil
	case events.SuiteDrain:
		return SuiteDrained, nil
	case events.SuiteCancel:
		return SuiteCancelled, nil
	}
	return from, fmt.Errorf("unknown action %q (want one of %v)", action, events.SuiteActions())
}

// Verdict is what a suite's controls say to one of its runs.
type Verdict int

// The verdicts.
const (
	// Proceed: start the run, or go on with it.
	Proceed Verdict = iota
	// Hold: wait (keeping the run) until the suite's state changes.
	Hold
	// Stop: end the run cancelled, with the gate's reason.
	Stop
)

// Gate is a verdict and, for Stop, the run.ended reason.
type Gate struct {
	Verdict Verdict
	Reason  string
}

// BeforeStart is the gate of a run not started (no run.claimed): an
// active suite starts it, a paused one holds it, a drained or cancelled one
// never starts it.
func (c SuiteControl) BeforeStart() Gate {
	switch c.State {
	case SuitePaused:
		return Gate{Verdict: Hold}
	case SuiteDrained:
		return Gate{Verdict: Stop, Reason: events.ReasonSuiteDrained}
	case SuiteCancelled:
		return Gate{Verdict: Stop, Reason: events.ReasonSuiteCancelled}
	}
	return Gate{Verdict: Proceed}
}

// AtBoundary is the gate of a running run between two turns: a paused
// suite holds it, a cancelled one ends it (reason "suite_cancelled" and
// the operator's reason), an active or drained one lets it go on.
func (c SuiteControl) AtBoundary() Gate {
	switch c.State {
	case SuitePaused:
		return Gate{Verdict: Hold}
	case SuiteCancelled:
		return Gate{Verdict: Stop, Reason: c.CancelReason()}
	}
	return Gate{Verdict: Proceed}
}

// CancelReason is the reason a cancelled suite's running runs end with:
// "suite_cancelled", then the operator's reason when one was given.
func (c SuiteControl) CancelReason() string {
	r := events.ReasonSuiteCancelled
	if l := c.Last(); l != nil && l.Action == events.SuiteCancel && l.Reason != "" {
		r += ": " + l.Reason
	}
	return r
}

// MayRequest reports whether the meter may request more of the suite's
// attempts: only while it is active.
func (c SuiteControl) MayRequest() bool { return c.State == SuiteActive }

// Ends reports whether the suite starts no attempt again (drained or
// cancelled): its attempts never requested are never run.
func (c SuiteControl) Ends() bool { return c.State == SuiteDrained || c.State == SuiteCancelled }
