package stop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/factline/factline/events"
)

// maxCitable bounds how many citable refs continue feedback lists.
const maxCitable = 12

// Decide returns the one stop decision for completed turn n, given the
// stall handler's observation of that turn. It decides on the run as the
// state holds it: a steer folded before the decision makes the turn's
// completion stale.
//
// In order: a stall stop or escalation ends the run incomplete (never done);
// a proposal from an older task generation is stale; report_blocked ends
// blocked with the actor's reason and unmet requirements and no invented
// evidence; propose_done (a natural finish included) is checked: every cited
// ref must be an executed dispatch of this run in the current generation,
// other than the claim itself, and every requirement must be shown (checks
// by an executed pass at the current epoch, in declared order, the write by
// an applied change that stands, the rest by the actor's valid evidence).
// Anything short of that continues, with feedback that says what is
// missing. A stall retry never blocks a valid done; it only adds its own
// feedback, which the runner delivers.
func Decide(s State, n uint32, stall events.StallObservation, p Policy) events.StopDecision {
	d := events.StopDecision{DecisionID: DecisionID(s.run, n), Turn: n, TaskGeneration: max(s.generation, 1)}
	tr, ok := s.turns[n]
	if !ok {
		d.Result = events.ContinueWith(fmt.Sprintf("turn %d has no completed evidence in this run", n), s.unmetIgnoringProposal(p)...)
		return d
	}
	if stall.Action != nil {
		switch a := stall.Action.Variant().(type) {
		case events.StallStop:
			d.Result = s.incomplete(p, a.Unmet, orEmpty(a.Evidence), "stall: "+a.Cause+": repair ended without the work done")
			return d
		case events.StallEscalate:
			d.Result = s.incomplete(p, nil, orEmpty(a.Evidence), "stall: "+a.Cause+": escalated to "+a.Target)
			return d
		}
	}
	switch in := tr.ev.ActorIntent.Variant().(type) {
	case events.IntentReportBlocked:
		if tr.gen < s.generation {
			d.Result = events.ContinueWith(s.staleFeedback(n, tr.gen, "reported blocked"), s.unmetIgnoringProposal(p)...)
			return d
		}
		d.Result = s.blocked(p, in)
	case events.IntentProposeDone:
		d.Result = s.proposal(n, tr, in.Evidence, p)
	default:
		d.Result = events.ContinueWith("", s.unmetIgnoringProposal(p)...)
	}
	return d
}

func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// incomplete ends the run without the work done: every requirement not
// shown met is unmet, plus any the stall handler named.
func (s State) incomplete(p Policy, extra []events.RequirementID, evidence []events.EvidenceRef, reason string) events.StopResult {
	unmet := union(s.unmetIgnoringProposal(p), extra)
	return events.Finish(events.StopFinish{
		Status: events.FinishIncomplete, Supported: s.supported(p, unmet), Unmet: orEmpty(unmet),
		Evidence: evidence, Reason: reason,
	})
}

// blocked ends the run blocked with the actor's reason. Its unmet list is
// the actor's plus every requirement not shown met; it cites no evidence.
func (s State) blocked(p Policy, in events.IntentReportBlocked) events.StopResult {
	unmet := union(in.Unmet, s.unmetIgnoringProposal(p))
	return events.Finish(events.StopFinish{
		Status: events.FinishBlocked, Supported: s.supported(p, unmet), Unmet: orEmpty(unmet),
		Evidence: []events.EvidenceRef{}, Reason: in.Reason,
	})
}

// supported lists the requirements shown met that are not in unmet.
func (s State) supported(p Policy, unmet []events.RequirementID) []events.RequirementID {
	out := []events.RequirementID{}
	for _, r := range p.Requirements {
		if slices.Contains(unmet, r.ID) {
			continue
		}
		if r.Check != "" {
			if st, _ := s.checkState(r.Check); st == checkPassed {
				out = append(out, r.ID)
			}
		} else if r.Write && s.writeStands(p) {
			out = append(out, r.ID)
		}
	}
	return out
}

// unmetIgnoringProposal lists the requirements the run does not show met
// without taking any actor evidence: evidence-only requirements are unmet.
func (s State) unmetIgnoringProposal(p Policy) []events.RequirementID {
	var out []events.RequirementID
	for _, r := range p.Requirements {
		switch {
		case r.Check != "":
			if st, _ := s.checkState(r.Check); st != checkPassed {
				out = append(out, r.ID)
			}
		case r.Write:
			if !s.writeStands(p) {
				out = append(out, r.ID)
			}
		default:
			out = append(out, r.ID)
		}
	}
	return out
}

func union(a, b []events.RequirementID) []events.RequirementID {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func (s State) staleFeedback(n, gen uint32, what string) string {
	msg := fmt.Sprintf("Turn %d %s for task generation %d, but the task has changed since (generation %d)", n, what, gen, s.generation)
	if s.instruction != "" {
		msg += ": " + s.instruction
	}
	return msg + ". Work on the current task; evidence from before the change does not count."
}

// proposal judges propose_done: citations first, then the requirements.
func (s State) proposal(n uint32, tr turnRec, cited []events.EvidenceRef, p Policy) events.StopResult {
	if tr.gen < s.generation {
		return events.ContinueWith(s.staleFeedback(n, tr.gen, "proposed done"), s.unmetIgnoringProposal(p)...)
	}
	if bad := s.badCitations(cited); len(bad) > 0 {
		var b strings.Builder
		b.WriteString("The completion claim cites evidence that cannot count:\n")
		for _, x := range bad {
			fmt.Fprintf(&b, "- %s %s\n", x.ref, x.why)
		}
		b.WriteString(s.citable())
		return events.ContinueWith(strings.TrimRight(b.String(), "\n"), s.unmetIgnoringProposal(p)...)
	}

	var unmet, supported []events.RequirementID
	evidence := slices.Clone(cited)
	var problems []string
	for _, r := range s.ordered(p) {
		switch {
		case r.Check != "":
			st, c := s.checkState(r.Check)
			if st == checkPassed {
				supported = append(supported, r.ID)
				evidence = appendRef(evidence, c.ref)
				continue
			}
			unmet = append(unmet, r.ID)
			problems = append(problems, s.checkProblem(r, st, c, p))
		case r.Write:
			if s.writeStands(p) {
				// The change is workspace content, so it stands across a
				// steer; it is cited only when it belongs to the current
				// task, like all completion evidence.
				supported = append(supported, r.ID)
				if s.writeGen == s.generation {
					evidence = appendRef(evidence, s.lastWrite)
				}
				continue
			}
			unmet = append(unmet, r.ID)
			problems = append(problems, fmt.Sprintf("requirement %q needs an applied change to the workspace, and none stands", r.ID))
		default:
			// Shown by the actor's evidence: valid citations, or, with none
			// cited, the answer itself when the case needs no write.
			if len(cited) > 0 || !p.needsWrite() {
				supported = append(supported, r.ID)
				continue
			}
			unmet = append(unmet, r.ID)
			problems = append(problems, fmt.Sprintf("requirement %q needs cited evidence: cite the dispatches that show it", r.ID))
		}
	}
	if len(unmet) > 0 {
		var b strings.Builder
		b.WriteString("Not done yet:\n")
		for _, pr := range problems {
			b.WriteString("- " + pr + "\n")
		}
		return events.ContinueWith(strings.TrimRight(b.String(), "\n"), unmet...)
	}
	reason := "no requirements: the answer stands"
	if len(supported) > 0 {
		reason = fmt.Sprintf("all %d requirements shown at source epoch %d", len(supported), s.epoch)
	}
	return events.Finish(events.StopFinish{
		Status: events.FinishDone, Supported: orEmpty(supported), Unmet: []events.RequirementID{},
		Evidence: orEmpty(evidence), Reason: reason,
	})
}

func appendRef(refs []events.EvidenceRef, r events.EvidenceRef) []events.EvidenceRef {
	if r == "" || slices.Contains(refs, r) {
		return refs
	}
	return append(refs, r)
}

// ordered returns the requirements in the order the decider asks for them:
// check requirements in the declared order of their checks, then the rest
// in the case's order.
func (s State) ordered(p Policy) []Requirement {
	var out []Requirement
	for _, c := range p.Checks {
		for _, r := range p.Requirements {
			if r.Check == c.ID {
				out = append(out, r)
			}
		}
	}
	for _, r := range p.Requirements {
		if !slices.ContainsFunc(out, func(o Requirement) bool { return o.ID == r.ID }) {
			out = append(out, r)
		}
	}
	return out
}

// checkProblem says what a required check lacks, naming the check and, when
// it has to run, its command: the decider asks for a check it has not seen
// rather than invent a result.
func (s State) checkProblem(r Requirement, st checkState, c checkRec, p Policy) string {
	run := fmt.Sprintf("run check %q", r.Check)
	if cmd := p.command(r.Check); cmd != "" {
		run += fmt.Sprintf(" (%s)", cmd)
	}
	switch st {
	case checkFailed:
		msg := fmt.Sprintf("check %q failed (%s at source epoch %d)", r.Check, c.ref, c.epoch)
		if len(c.diags) > 0 {
			msg += ": " + c.diags[0].Message
		}
		return msg + "; fix it, then " + run
	case checkStale:
		return fmt.Sprintf("check %q passed at source epoch %d, but the workspace has changed since (epoch %d): %s again", r.Check, c.epoch, s.epoch, run)
	}
	if c.later != "" {
		return fmt.Sprintf("check %q has no executed result in this task (the last attempt was %s): %s", r.Check, c.later, run)
	}
	return fmt.Sprintf("check %q has not run on the current workspace in this task: %s", r.Check, run)
}

type badRef struct {
	ref events.EvidenceRef
	why string
}

// badCitations lists the cited refs that cannot count, and why.
func (s State) badCitations(cited []events.EvidenceRef) []badRef {
	var bad []badRef
	for _, ref := range cited {
		rec, ok := s.dispatches[ref]
		switch {
		case !ok:
			if k, isFact := s.refFact(ref); isFact {
				bad = append(bad, badRef{ref, fmt.Sprintf("names a %s fact, not a completed dispatch", k)})
			} else {
				bad = append(bad, badRef{ref, "does not exist in this run"})
			}
		case rec.tool == taskCompleteTool:
			bad = append(bad, badRef{ref, "is the completion claim itself"})
		case rec.disposition != events.DispositionExecuted:
			bad = append(bad, badRef{ref, fmt.Sprintf("was %s, not executed", rec.disposition)})
		case rec.gen != s.generation:
			bad = append(bad, badRef{ref, fmt.Sprintf("belongs to task generation %d; the current task is generation %d", rec.gen, s.generation)})
		}
	}
	return bad
}

// citable lists what could have been cited: executed dispatches of the
// current task generation, newest first.
func (s State) citable() string {
	var lines []string
	for i := len(s.order) - 1; i >= 0 && len(lines) < maxCitable; i-- {
		ref := s.order[i]
		rec := s.dispatches[ref]
		if rec.tool == taskCompleteTool || rec.disposition != events.DispositionExecuted || rec.gen != s.generation {
			continue
		}
		line := "- " + string(ref)
		var about []string
		if rec.tool != "" {
			about = append(about, rec.tool)
		}
		if rec.check != "" {
			about = append(about, "check "+rec.check)
		}
		if rec.result != "" {
			about = append(about, rec.result)
		}
		if len(about) > 0 {
			line += " (" + strings.Join(about, ", ") + ")"
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return "Nothing in the current task can be cited yet: do the work, run the declared checks, then cite them."
	}
	return "Evidence that could be cited:\n" + strings.Join(lines, "\n")
}
