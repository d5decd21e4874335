package stall

import (
	"fmt"
	"slices"

	"github.com/factline/factline/events"
)

// Observe returns the stall observation for turn n, which the state must
// have folded (see HasTurn; an unknown turn gives an observation with
// position 0, which no fact accepts). It depends only on what the fold saw
// up to that turn's completion, so a replay of the whole log gives the
// observation that was committed.
//
// No armed pattern: no action. An armed pattern, with repair budget left:
// retry, with feedback and the budget remaining after it. Budget spent:
// escalate to the admitted target if the policy names one, else stop with
// every requirement not shown met. While a retry's feedback has not reached
// the model (no turn has started since it was committed), the pattern stays
// armed but no decision is taken on it: a warning is not proof the model
// received it.
func Observe(s State, n uint32) events.StallObservation {
	r, ok := s.turns[n]
	if !ok {
		return events.StallObservation{}
	}
	obs := events.StallObservation{Position: r.position, Checkpoint: r.checkpoint}
	obs.Checkpoint.Armed = slices.Clone(r.armed)
	if len(r.armed) == 0 || r.undelivered {
		return obs
	}
	cause := r.armed[0]
	f := r.findings[cause]
	refs := f.refs
	if refs == nil {
		refs = []events.EvidenceRef{}
	}
	p := s.policy
	used := int(r.checkpoint.RepairsUsed)
	var a events.StallAction
	switch {
	case used < p.RepairBudget:
		remaining := p.RepairBudget - used - 1
		a = events.Retry(events.StallRetry{Cause: cause, Feedback: feedback(cause, f, remaining), Remaining: uint32(remaining)})
		obs.Checkpoint.RepairsUsed++
	case p.EscalateTo != "":
		a = events.Escalate(events.StallEscalate{Cause: cause, Target: p.EscalateTo, Evidence: refs})
	default:
		unmet := slices.Clone(r.unmet)
		if unmet == nil {
			unmet = []events.RequirementID{}
		}
		a = events.StopStall(events.StallStop{Cause: cause, Unmet: unmet, Evidence: refs})
	}
	obs.Action = &a
	return obs
}

// feedback is what a retry tells the model: what repeated, why repeating it
// will not help, and how many repairs are left.
func feedback(cause string, f finding, remaining int) string {
	var msg string
	switch cause {
	case PatternRepeatedFailure:
		msg = fmt.Sprintf("Check %q failed %d times in a row on a workspace that did not change in between. "+
			"Running it again without changing the code will fail the same way. ", f.check, f.count)
		if f.diags != "" {
			msg += "It reports: " + f.diags + ". "
		}
		msg += "Read those errors and change the code before the next run."
	case PatternFailingVerifications:
		msg = fmt.Sprintf("%d turns have ended with a failing check and no clean pass since. "+
			"Different error text is not progress: step back, re-read the failing check's full output "+
			"and the task, and fix the cause rather than the symptom.", f.count)
	case PatternRepeatedError:
		msg = fmt.Sprintf("The same call (%s) failed with the same error (%s) %d turns in a row. "+
			"Retrying it unchanged will fail again: change the arguments or take another approach.", f.calls, f.errs, f.count)
	case PatternRepeatedObservation:
		msg = fmt.Sprintf("The same call (%s) returned exactly the same result %d turns in a row. "+
			"Repeating it gives no new information: use what it returned and take a different step.", f.calls, f.count)
	case PatternAlternation:
		msg = fmt.Sprintf("The last turns went back and forth between the same two steps with the same results (%d cycles). "+
			"This loop does not converge: take a different step.", f.count)
	case PatternIdleTurns:
		msg = fmt.Sprintf("%d turns in a row did no work: no tool call, or only calls that were refused, failed, "+
			"or changed nothing. Make a concrete tool call, call task_complete citing evidence, or report that you are blocked.", f.count)
	default:
		msg = "The run is not making progress: take a different step."
	}
	if remaining == 1 {
		return msg + " One repair attempt is left after this one."
	}
	return msg + fmt.Sprintf(" Repair attempts left after this one: %d.", remaining)
}
