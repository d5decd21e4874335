package step

import (
	"fmt"
	"strings"

	"github.com/factline/factline/events"
)

// Ending is how a run ends: its status and the reason run.ended carries.
// The zero Ending ends nothing: the run goes on.
type Ending struct {
	Status events.RunStatus
	Reason string
}

// Ends says the run ends so: it has a status.
func (e Ending) Ends() bool { return e.Status != "" }

// Finished is the ending of a run the stop decider finished.
func Finished(fin events.StopFinish) Ending {
	return Ending{runStatus(fin.Status), fin.Reason}
}

func runStatus(s events.FinishStatus) events.RunStatus {
	switch s {
	case events.FinishDone:
		return events.RunDone
	case events.FinishBlocked:
		return events.RunBlocked
	}
	return events.RunIncomplete
}

// UnknownReason is the handoff of a run stopped on an operation of
// unknown outcome: the operation, the approved arguments, what is known,
// and what a person does next.
func UnknownReason(in events.DispatchIntended, known []string) string {
	msg := fmt.Sprintf("unknown outcome of operation %s (%s, arguments %s)", in.OperationID, in.Tool, in.ArgsDigest)
	for _, k := range known {
		if k != "" {
			msg += ": " + k
		}
	}
	return msg + fmt.Sprintf("; it may or may not have taken effect: check the sink for Idempotency-Key %s", in.OperationID)
}

// UnknownOp is an external operation settled with an unknown outcome:
// its intent and what its settlement said.
type UnknownOp struct {
	Intended events.DispatchIntended
	Note     string
}

// Reason is the handoff of a run stopped on the operation.
func (u UnknownOp) Reason() string { return UnknownReason(u.Intended, []string{u.Note}) }

// UnknownOperations lists the external operations of a run whose
// settlement says their outcome is unknown, in log order.
func UnknownOperations(facts []events.Fact) []UnknownOp {
	u := newUnknowns()
	for _, f := range facts {
		u.apply(f)
	}
	return u.ops
}

// unknowns is UnknownOperations' fold: the operations found so far, and
// the intents of the run's calls, which a settlement names by turn and
// call.
type unknowns struct {
	intended map[turnCall]events.DispatchIntended
	ops      []UnknownOp
}

func newUnknowns() unknowns {
	return unknowns{intended: map[turnCall]events.DispatchIntended{}}
}

// apply folds one fact into the operations found.
func (u *unknowns) apply(f events.Fact) {
	switch b := f.Body.(type) {
	case events.DispatchIntended:
		u.intended[turnCall{b.Turn, b.CallID}] = b
	case events.DispatchCompleted:
		if b.Dispatch.Outcome != events.OutcomeUnknown {
			return
		}
		in, ok := u.intended[turnCall{b.Turn, b.Dispatch.CallID}]
		if !ok {
			return
		}
		note := ""
		if b.Error != nil {
			note = b.Error.Message
		}
		u.ops = append(u.ops, UnknownOp{Intended: in, Note: note})
	}
}

// SurfaceUnknown makes a run's end name every operation of unknown
// outcome: such a run needs a person, whatever else ended it, except that
// a cancel stays a cancel (the reason then names the operations too).
func SurfaceUnknown(end Ending, facts []events.Fact) Ending {
	for _, u := range UnknownOperations(facts) {
		if strings.Contains(end.Reason, u.Intended.OperationID) {
			continue
		}
		end.Reason += "; " + u.Reason()
		if end.Status != events.RunCancelled {
			end.Status = events.RunNeedsHuman
		}
	}
	return end
}

// LastEvidence is the evidence of the last completed turn.
func LastEvidence(facts []events.Fact) []events.EvidenceRef {
	for i := len(facts) - 1; i >= 0; i-- {
		if tc, ok := facts[i].Body.(events.TurnCompleted); ok {
			var refs []events.EvidenceRef
			for _, d := range tc.Evidence.Dispatches {
				refs = append(refs, d.EvidenceRef)
			}
			return refs
		}
	}
	return nil
}

// nextActions are what the handoff of a run tells a person to do next, by
// the status it ended with; a status not here gets generalNextAction.
var nextActions = map[events.RunStatus]string{
	events.RunDone:       "review the sealed candidate and the evidence its checks left",
	events.RunErrored:    "fix the harness or the run request named in the reason, then request a new run",
	events.RunNeedsHuman: "a person must decide: read the reason and the last observation",
	events.RunExhausted:  "the budget named in the reason ran out: raise it or authorize a new bounded run, if it is still the right work",
}

// generalNextAction is the handoff's next action for the other statuses
// (blocked, incomplete, cancelled).
const generalNextAction = "inspect the last observation; authorize a new bounded run if it is still the right work"

// NextAction is what the handoff of a run that ended with a status tells
// a person to do next.
func NextAction(s events.RunStatus) string {
	if a, ok := nextActions[s]; ok {
		return a
	}
	return generalNextAction
}
