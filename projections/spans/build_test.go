package spans_test

import (
	"testing"
	"time"

	"github.com/factline/factline/events"
)

// t0 is when every test log begins; each fact is one second after the
// one before it, so a span's times name the facts that bound it.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// logb builds a valid log of one suite: facts in commit order, each at
// the next second.
type logb struct {
	t     *testing.T
	suite string
	facts []events.Fact
	pos   map[string]uint64
}

func newLog(t *testing.T) *logb { return &logb{t: t, suite: "s1", pos: map[string]uint64{}} }

// at is the time of the n-th fact (0-based).
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

func (l *logb) add(run string, gen uint32, owner events.Owner, body events.Body) events.Fact {
	l.t.Helper()
	l.pos[run]++
	f, err := events.NewFact(events.Meta{
		Suite: l.suite, Run: run, TaskGeneration: gen, Position: l.pos[run],
		Producer: events.Producer{Service: owner, Instance: string(owner) + "-0"},
		At:       at(len(l.facts)),
	}, body)
	if err != nil {
		l.t.Fatalf("fact %d (%T): %v", len(l.facts), body, err)
	}
	l.facts = append(l.facts, f)
	return f
}

func (l *logb) runner(run string, b events.Body) events.Fact {
	return l.add(run, 1, events.OwnerRunner, b)
}

func digest(s string) events.Digest { return events.DigestOf([]byte(s)) }

func u64(n uint64) *uint64 { return &n }

func (l *logb) submitted() events.Fact {
	return l.add(events.SuiteScope, 0, events.OwnerSubmitter, events.SuiteSubmitted{
		Name: "s1", SpecDigest: digest("spec"), Trials: 1,
		Cases:      []events.Ref{{ID: "fix-sum", Digest: digest("case")}},
		Treatments: []events.Ref{{ID: "base", Digest: digest("treatment")}},
	})
}

func (l *logb) requested(run string) events.Fact {
	return l.add(run, 1, events.OwnerMeter, events.RunRequested{
		Case: "fix-sum", CaseDigest: digest("case"), Treatment: "base", TreatmentDigest: digest("treatment"), Trial: 1,
	})
}

func (l *logb) claimed(run string) events.Fact {
	return l.runner(run, events.RunClaimed{Runner: "runner-a", Lease: 1})
}

func (l *logb) turnStarted(run string, turn uint32) events.Fact {
	return l.runner(run, events.TurnStarted{Turn: turn, ContextDigest: digest("ctx"), Messages: 2})
}

func (l *logb) replied(run string, turn uint32, text string, usage *events.Usage, calls ...events.ToolCall) events.Fact {
	return l.runner(run, events.ModelReplied{
		Turn: turn, Provider: "openai", Model: "gpt-4.1-mini", Text: text, Calls: calls, Usage: usage, Finish: "tool_calls",
	})
}

func call(id, name, args string) events.ToolCall {
	return events.ToolCall{ID: events.CallID(id), Name: name, Args: args, ArgsDigest: digest(args)}
}

func (l *logb) intended(run string, turn uint32, id, tool string, effect events.EffectClass) events.Fact {
	return l.runner(run, events.DispatchIntended{
		Turn: turn, CallID: events.CallID(id), Tool: tool, OperationID: run + "/" + id, ArgsDigest: digest(id), Effect: effect,
	})
}

func (l *logb) completed(run string, turn uint32, id, tool, output string, d events.Disposition, outcome string, terr *events.ToolError) events.Fact {
	return l.runner(run, events.DispatchCompleted{Turn: turn, Output: output, Error: terr, Dispatch: events.CompletedDispatch{
		CallID: events.CallID(id), EvidenceRef: events.EvidenceRef("ev/" + id), Disposition: d,
		Mutation: events.MutationNotApplicable, Verification: events.NotVerifier(), Tool: tool, Outcome: outcome,
	}})
}

func (l *logb) turnCompleted(run string, turn uint32, intent events.ActorIntent) events.Fact {
	return l.runner(run, events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: run, TaskGeneration: 1, Turn: turn, EvidencePosition: l.pos[run], ActorIntent: intent,
	}})
}

func (l *logb) stall(run string, turn uint32) events.Fact {
	return l.add(run, 1, events.OwnerStaller, events.StallObserved{Turn: turn, Observation: events.StallObservation{Position: l.pos[run]}})
}

func (l *logb) stop(run string, turn uint32, r events.StopResult) events.Fact {
	return l.add(run, 1, events.OwnerDecider, events.StopDecided{Decision: events.StopDecision{
		DecisionID: run + "/stop", Turn: turn, TaskGeneration: 1, Result: r,
	}})
}

func (l *logb) ended(run string, status events.RunStatus) events.Fact {
	return l.runner(run, events.RunEnded{Status: status, Reason: "because", Steps: 2,
		Spent: events.Spent{Steps: 2, Tokens: u64(170), Millis: 9000}})
}

func (l *logb) sealed(run string) events.Fact {
	return l.runner(run, events.CandidateSealed{SnapshotDigest: digest("snap"), Files: 3})
}

func (l *logb) instrument(run, id string, required bool, outcome events.InstrumentOutcome) events.Fact {
	return l.add(run, 1, events.OwnerGrader, events.GradeInstrument{SnapshotDigest: digest("snap"), Result: events.InstrumentResult{
		Instrument: events.InstrumentID(id), Version: "1", Required: required, Outcome: outcome,
	}})
}

func (l *logb) verdict(run string, revision uint32, r events.VerdictResult) events.Fact {
	return l.add(run, 1, events.OwnerGrader, events.GradeVerdict{Verdict: events.GraderVerdict{
		AttemptID: run, SnapshotID: digest("snap"), Revision: revision, Result: r,
	}})
}

func (l *logb) reported() events.Fact {
	return l.add(events.SuiteScope, 0, events.OwnerMeter, events.SuiteReported{ReportDigest: digest("report"), Attempts: 1, Passed: 1})
}

// fullRun is one suite of one run through every kind of span: two turns
// (a tool call in the first), an end, a seal and two instruments.
func fullRun(t *testing.T) *logb {
	l := newLog(t)
	l.submitted()                     // 0
	l.requested("r1")                 // 1
	l.claimed("r1")                   // 2
	l.turnStarted("r1", 1)            // 3
	l.replied("r1", 1, "let me look", // 4
		&events.Usage{InputTokens: 100, OutputTokens: 10, Cost: u64(5)},
		call("c1", "read_file", `{"path":"sum.py"}`))
	l.intended("r1", 1, "c1", "read_file", events.EffectRead)                                     // 5
	l.completed("r1", 1, "c1", "read_file", "def sum", events.DispositionExecuted, "", nil)       // 6
	l.turnCompleted("r1", 1, events.Continue())                                                   // 7
	l.stall("r1", 1)                                                                              // 8
	l.stop("r1", 1, events.ContinueWith("go on"))                                                 // 9
	l.turnStarted("r1", 2)                                                                        // 10
	l.replied("r1", 2, "done", &events.Usage{InputTokens: 50, OutputTokens: 10})                  // 11
	l.turnCompleted("r1", 2, events.ProposeDone("ev/c1"))                                         // 12
	l.stall("r1", 2)                                                                              // 13
	l.stop("r1", 2, events.Finish(events.StopFinish{Status: events.FinishDone, Reason: "shown"})) // 14
	l.ended("r1", events.RunDone)                                                                 // 15
	l.sealed("r1")                                                                                // 16
	l.instrument("r1", "tests", true, events.InstrumentPassed)                                    // 17
	l.instrument("r1", "lint", false, events.InstrumentFailed)                                    // 18
	l.verdict("r1", 1, events.VerdictOK())                                                        // 19
	l.reported()                                                                                  // 20
	return l
}
