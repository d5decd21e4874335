// Package ops holds what operators read: one-line renderings of facts for
// tails and logs, and (later) metrics and dashboards.
package ops

import (
	"fmt"
	"strings"
	"time"

	"github.com/factline/factline/events"
)

// NoToolCall is what a line says of a model reply with no tool call, and
// of the turn it completed: the runner reads such a reply as a proposal
// to finish with no evidence, which the stop decider judges.
const NoToolCall = "the model made no tool call"

// Line renders one committed fact as a single readable line: sequence, time,
// suite/run, kind and the fields that matter for that kind.
func Line(seq uint64, f events.Fact) string {
	return fmt.Sprintf("%6d %s %s/%s %-18s %s", seq, f.At.Format(time.TimeOnly), f.Suite, f.Run, f.Kind(), Summary(f))
}

// Summary renders the fields of a fact's body an operator looks at first.
func Summary(f events.Fact) string {
	switch b := f.Body.(type) {
	case events.SuiteSubmitted:
		return fmt.Sprintf("suite %q: %d cases × %d treatments × %d trials", b.Name, len(b.Cases), len(b.Treatments), b.Trials)
	case events.RunRequested:
		return fmt.Sprintf("case=%s treatment=%s trial=%d", b.Case, b.Treatment, b.Trial)
	case events.RunClaimed:
		return fmt.Sprintf("runner=%s lease=%d", b.Runner, b.Lease)
	case events.TurnStarted:
		return fmt.Sprintf("turn=%d context=%s", b.Turn, short(b.ContextDigest))
	case events.ModelReplied:
		usage := "usage=unknown"
		if b.Usage != nil {
			usage = fmt.Sprintf("tokens=%d+%d", b.Usage.InputTokens, b.Usage.OutputTokens)
		}
		names := make([]string, len(b.Calls))
		for i, c := range b.Calls {
			names[i] = c.Name
		}
		calls := "calls=[" + strings.Join(names, ",") + "]"
		if len(b.Calls) == 0 {
			calls = NoToolCall
		}
		line := fmt.Sprintf("turn=%d %s %s", b.Turn, calls, usage)
		if c := b.Cached; c != nil {
			// Served by the response cache: the model was not called.
			line += " cached"
			if c.Run != "" {
				line += fmt.Sprintf(" from=%s/%s/t%d", c.Suite, c.Run, c.Turn)
			}
		}
		if b.QueueWaitMs > 0 {
			line += fmt.Sprintf(" waited=%s", time.Duration(b.QueueWaitMs)*time.Millisecond)
		}
		return line
	case events.ContextSummarised:
		usage := "usage=unknown"
		if b.Usage != nil {
			usage = fmt.Sprintf("tokens=%d+%d", b.Usage.InputTokens, b.Usage.OutputTokens)
		}
		return fmt.Sprintf("turn=%d summary of turns %d-%d %s", b.Turn, b.From, b.Through, usage)
	case events.DispatchIntended:
		return fmt.Sprintf("turn=%d %s(%s) effect=%s op=%s", b.Turn, b.Tool, b.CallID, b.Effect, b.OperationID)
	case events.DispatchCompleted:
		d := b.Dispatch
		return fmt.Sprintf("turn=%d %s %s mutation=%s verification=%s", b.Turn, d.CallID, d.Disposition, d.Mutation, d.Verification.Type())
	case events.TurnCompleted:
		e := b.Evidence
		line := fmt.Sprintf("turn=%d intent=%s dispatches=%d", e.Turn, e.ActorIntent.Type(), len(e.Dispatches))
		if _, done := e.ActorIntent.Variant().(events.IntentProposeDone); done && len(e.Dispatches) == 0 {
			// Every call of a reply is settled into the turn's evidence,
			// refused ones too: none means the reply had none, and the
			// runner read it as a proposal to finish. (An external
			// agent's turn that continues holds no dispatches although
			// its reply called the agent's own tools.)
			line += " (" + NoToolCall + ")"
		}
		return line
	case events.StallObserved:
		action := "none"
		if a := b.Observation.Action; a != nil {
			action = a.Type()
		}
		return fmt.Sprintf("turn=%d action=%s", b.Turn, action)
	case events.StopDecided:
		d := b.Decision
		if fin, ok := d.Result.Variant().(events.StopFinish); ok {
			return fmt.Sprintf("turn=%d finish %s: %s", d.Turn, fin.Status, fin.Reason)
		}
		return fmt.Sprintf("turn=%d continue", d.Turn)
	case events.ControlAccepted:
		return fmt.Sprintf("%s id=%s", b.Control.Signal, b.Control.ID)
	case events.TaskGenerationStarted:
		return fmt.Sprintf("generation=%d", b.Generation)
	case events.RunEnded:
		return fmt.Sprintf("status=%s steps=%d reason=%q", b.Status, b.Steps, b.Reason)
	case events.CandidateSealed:
		return fmt.Sprintf("snapshot=%s files=%d", short(b.SnapshotDigest), b.Files)
	case events.GradeInstrument:
		return fmt.Sprintf("%s %s required=%t", b.Result.Instrument, b.Result.Outcome, b.Result.Required)
	case events.GradeVerdict:
		return fmt.Sprintf("revision=%d result=%s", b.Verdict.Revision, b.Verdict.Result.Type())
	case events.GradeConflict:
		return fmt.Sprintf("revision=%d conflicts with %d: %s", b.Revision, b.ConflictsWith, b.Reason)
	case events.SuiteReported:
		return fmt.Sprintf("attempts=%d passed=%d failed=%d pending=%d invalid=%d", b.Attempts, b.Passed, b.Failed, b.Pending, b.Invalid)
	case events.SuiteControlled:
		line := fmt.Sprintf("%s by %s", b.Action, b.From)
		if b.Reason != "" {
			line += fmt.Sprintf(": %q", b.Reason)
		}
		return line + " (control " + b.ID + ")"
	case events.SuiteStopped:
		return fmt.Sprintf("%s: %s after %d pairs [%+.1f, %+.1f] pts", b.Comparison, b.Reason, b.Pairs, float64(b.Low)/10, float64(b.High)/10)
	}
	return ""
}

func short(d events.Digest) string {
	h := d.Hex()
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
