package events

import (
	"encoding/json"
	"fmt"
)

// Control is a control signal as it travels on ctl.<suite>.<run>.<signal>
// (JSON, in the CONTROL stream). It is a request, not a fact: it matters
// only once a runner accepts it, and the acceptance is control.accepted.
type Control struct {
	// ID names the signal; acceptance cites it.
	ID     string `json:"id"`
	Signal Signal `json:"signal"`
	// Instruction is what a steer adds to the task.
	Instruction string `json:"instruction,omitempty"`
	// Operation is the operation ID an approve or reject answers.
	Operation string `json:"operation,omitempty"`
	// ArgsDigest binds an approval to the exact arguments it approves.
	ArgsDigest Digest `json:"args_digest,omitempty"`
	// Reason says why (cancel, reject, resolve).
	Reason string `json:"reason,omitempty"`
	// Outcome is a resolution's finding: applied or not_applied.
	Outcome string `json:"outcome,omitempty"`
	// From names who sent it.
	From string `json:"from,omitempty"`
}

// Validate checks a control signal.
func (c Control) Validate() error {
	if err := needString("", "id", c.ID); err != nil {
		return err
	}
	if err := needOneOf("", "signal", c.Signal, signals); err != nil {
		return err
	}
	switch c.Signal {
	case SignalSteer:
		return needString("", "instruction", c.Instruction)
	case SignalApprove, SignalReject, SignalResolve:
		if err := needString("", "operation", c.Operation); err != nil {
			return err
		}
		switch c.Signal {
		case SignalApprove:
			return needDigest("", "args_digest", c.ArgsDigest)
		case SignalResolve:
			return needOneOf("", "outcome", c.Outcome, []string{OutcomeApplied, OutcomeNotApplied})
		}
	}
	return nil
}

// DecodeControl parses and checks a control signal.
func DecodeControl(data []byte) (Control, error) {
	var c Control
	if err := json.Unmarshal(data, &c); err != nil {
		return Control{}, &FieldError{Field: "control", Reason: fmt.Sprintf("not a control signal: %v", err), Err: ErrMalformed}
	}
	if err := c.Validate(); err != nil {
		return Control{}, err
	}
	return c, nil
}
