package events

import "slices"

// StallAction is the stall handler's bounded repair step:
// retry{cause, feedback, remaining} | escalate{cause, target, evidence} |
// stop{cause, unmet, evidence}. A stall stop means incomplete work.
type StallAction struct{ union[stallSpec] }

// StallRetry grants another attempt with feedback; Remaining is the repair
// budget left after this one.
type StallRetry struct {
	Cause     string `msgpack:"cause"`
	Feedback  string `msgpack:"feedback"`
	Remaining uint32 `msgpack:"remaining"`
}

// StallEscalate hands the run to an admitted target (a reviewer, a human).
type StallEscalate struct {
	Cause    string        `msgpack:"cause"`
	Target   string        `msgpack:"target"`
	Evidence []EvidenceRef `msgpack:"evidence"`
}

// StallStop ends repair; the work is incomplete.
type StallStop struct {
	Cause    string          `msgpack:"cause"`
	Unmet    []RequirementID `msgpack:"unmet"`
	Evidence []EvidenceRef   `msgpack:"evidence"`
}

func (StallRetry) variantType() string    { return "retry" }
func (StallEscalate) variantType() string { return "escalate" }
func (StallStop) variantType() string     { return "stop" }

func (v StallRetry) validate(p string) error {
	if err := needString(p, "cause", v.Cause); err != nil {
		return err
	}
	return needString(p, "feedback", v.Feedback)
}

func (v StallEscalate) validate(p string) error {
	if err := needString(p, "cause", v.Cause); err != nil {
		return err
	}
	if err := needString(p, "target", v.Target); err != nil {
		return err
	}
	return eachString(p, "evidence", v.Evidence)
}

func (v StallStop) validate(p string) error {
	if err := needString(p, "cause", v.Cause); err != nil {
		return err
	}
	if err := eachString(p, "unmet", v.Unmet); err != nil {
		return err
	}
	return eachString(p, "evidence", v.Evidence)
}

type stallSpec struct{}

func (stallSpec) names() []string { return stallNames }

var stallNames = []string{"retry", "escalate", "stop"}

// StallActionTypes lists the Type of every stall action.
func StallActionTypes() []string { return slices.Clone(stallNames) }

func (stallSpec) variants() map[string]func() variant { return stallVariants }

var stallVariants = map[string]func() variant{
	"retry":    func() variant { return &StallRetry{} },
	"escalate": func() variant { return &StallEscalate{} },
	"stop":     func() variant { return &StallStop{} },
}

// Retry returns a retry action.
func Retry(v StallRetry) StallAction { return StallAction{union[stallSpec]{v}} }

// Escalate returns an escalate action.
func Escalate(v StallEscalate) StallAction { return StallAction{union[stallSpec]{v}} }

// StopStall returns a stop action.
func StopStall(v StallStop) StallAction { return StallAction{union[stallSpec]{v}} }

// StallCheckpoint is the stall fold's state after a turn, committed so that a
// reader can see why an action was (or was not) taken.
//
// Arming, opportunity, decision and delivery are kept apart: Armed says which
// patterns fired on the turn, the observation's Action is the decision taken
// on them, FeedbackDelivered counts retries whose feedback a later turn was
// started with, and Opportunity marks the turn that was the model's first
// chance to act on such feedback. A retry that was decided but not delivered
// is not proof that the model saw it.
type StallCheckpoint struct {
	Episode     uint32 `msgpack:"episode"`      // verification episode number
	RepairsUsed uint32 `msgpack:"repairs_used"` // repairs spent in this episode
	WriteCredit uint32 `msgpack:"write_credit"` // applied edits in this episode
	OpenFailure bool   `msgpack:"open_failure"` // a failed check not yet cleared
	Signature   string `msgpack:"signature"`    // digest of the turn's repeat signature
	// Armed names the stall patterns that reached their threshold on this
	// turn (absent when none did).
	Armed []string `msgpack:"armed,omitempty"`
	// FeedbackDelivered counts the retries of this episode whose feedback
	// reached the model: a turn was started after the retry was committed.
	FeedbackDelivered uint32 `msgpack:"feedback_delivered,omitempty"`
	// Opportunity is the turn whose retry this turn was the first chance to
	// answer (0 when the turn answers no retry).
	Opportunity uint32 `msgpack:"opportunity,omitempty"`
}

// StallObservation is the stall handler's output for one completed turn.
type StallObservation struct {
	Position   uint64          `msgpack:"position"`
	Checkpoint StallCheckpoint `msgpack:"checkpoint"`
	Action     *StallAction    `msgpack:"action,omitempty"`
}

func (o StallObservation) validate(p string) error {
	if err := needPositive(p, "position", o.Position); err != nil {
		return err
	}
	if o.Action != nil {
		return o.Action.validate(join(p, "action"))
	}
	return nil
}
