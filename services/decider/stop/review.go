package stop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/events"
)

// Verdict is a judge's answer on a done decision.
type Verdict string

// Judge verdicts. Only an objection can change a decision; a timeout or a
// refusal leaves it to the deterministic checks.
const (
	VerdictApprove Verdict = "approve"
	VerdictObject  Verdict = "object"
	VerdictTimeout Verdict = "timeout"
	VerdictRefused Verdict = "refused"
)

// Opinion is an optional model review of a done decision. Reviewer names
// the judging model (provider/name); it is never the actor's own model.
type Opinion struct {
	Reviewer string  // the judging model, provider/name
	Verdict  Verdict // approve, object, timeout or refused
	// Objections are the requirements the judge disputes; none means the
	// objection is to the answer as a whole.
	Objections []events.RequirementID
	Reason     string // the judge's explanation, passed on as feedback
	// Usage is what the judge's model call consumed, as its provider
	// reported it; nil when unknown (never zero). It changes no decision:
	// the decider records it as the evaluator's spend.
	Usage *events.Usage
}

// Review applies a judge's opinion to a decision. Only a done finish is
// reviewed. A judge cannot erase a check that ran and passed, nor an
// applied change that stands: an objection reopens only requirements that
// rest on the actor's evidence, and when it disputes nothing else the
// decision stays done (its reason notes the overruled objection). A
// timeout, a refusal, an approval, an opinion without a reviewer, or one by
// the actor's own model leaves the decision as it was.
func Review(d events.StopDecision, o Opinion, p Policy) events.StopDecision {
	fin, ok := d.Result.Variant().(events.StopFinish)
	if !ok || fin.Status != events.FinishDone {
		return d
	}
	if o.Verdict != VerdictObject || o.Reviewer == "" || o.Reviewer == p.ActorModel {
		return d
	}
	var reopen, overruled []events.RequirementID
	targets := o.Objections
	if len(targets) == 0 {
		for _, r := range p.Requirements {
			if r.evidenceOnly() {
				targets = append(targets, r.ID)
			}
		}
	}
	for _, id := range targets {
		i := slices.IndexFunc(p.Requirements, func(r Requirement) bool { return r.ID == id })
		if i >= 0 && p.Requirements[i].evidenceOnly() {
			reopen = append(reopen, id)
		} else {
			overruled = append(overruled, id)
		}
	}
	if len(reopen) == 0 {
		note := fmt.Sprintf("; reviewer %s objected (%s), but a passed check or an applied change is not the judge's to erase", o.Reviewer, o.Reason)
		fin.Reason += note
		d.Result = events.Finish(fin)
		return d
	}
	ids := make([]string, len(reopen))
	for i, id := range reopen {
		ids[i] = string(id)
	}
	fb := fmt.Sprintf("A reviewer (%s) disputes %s: %s", o.Reviewer, strings.Join(ids, ", "), o.Reason)
	if len(overruled) > 0 {
		fb += " (its objection to requirements shown by checks does not count)"
	}
	d.Result = events.ContinueWith(fb, reopen...)
	return d
}
