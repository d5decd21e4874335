package audit

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

type runLog struct {
	t     *testing.T
	facts []events.Fact
}

func (l *runLog) add(b events.Body) {
	l.t.Helper()
	pos := uint64(len(l.facts) + 1)
	f, err := events.NewFact(events.Meta{Suite: "s", Run: "r", TaskGeneration: 1, Position: pos,
		Producer: events.Producer{Service: b.Kind().Owner(), Instance: "t"}}, b)
	if err != nil {
		l.t.Fatal(err)
	}
	l.facts = append(l.facts, f)
}

// clean builds a run with one external call that took effect.
func clean(t *testing.T) *runLog {
	l := &runLog{t: t}
	d := events.DigestOf([]byte("x"))
	l.add(events.RunClaimed{Runner: "a", Lease: 1})
	l.add(events.TurnStarted{Turn: 1, ContextDigest: d})
	l.add(events.ModelReplied{Turn: 1, Provider: "p", Calls: []events.ToolCall{{ID: "c", Name: "http_call", ArgsDigest: d}}})
	l.add(events.DispatchIntended{Turn: 1, CallID: "c", Tool: "http_call", OperationID: "r/t1/c", ArgsDigest: d, Effect: events.EffectExternal})
	cd := events.CompletedDispatch{CallID: "c", EvidenceRef: "t1/c", Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.NotVerifier()}
	l.add(events.DispatchCompleted{Turn: 1, Dispatch: cd})
	l.add(events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r", TaskGeneration: 1, Turn: 1, EvidencePosition: 5, ActorIntent: events.Continue(), Dispatches: []events.CompletedDispatch{cd}}})
	l.add(events.StallObserved{Turn: 1, Observation: events.StallObservation{Position: 6}})
	l.add(events.StopDecided{Decision: events.StopDecision{DecisionID: "d", Turn: 1, TaskGeneration: 1, Result: events.Finish(events.StopFinish{Status: events.FinishIncomplete, Reason: "x"})}})
	l.add(events.CandidateSealed{SnapshotDigest: d})
	l.add(events.RunEnded{Status: events.RunIncomplete, Reason: "x"})
	l.add(events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "r", SnapshotID: d, Revision: 1, Result: events.VerdictFail()}})
	return l
}

func rules(vs []Violation) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Rule)
	}
	return strings.Join(out, ",")
}

func TestCleanRunPasses(t *testing.T) {
	if vs := Check(clean(t).facts, Options{Sink: map[string]int{"r/t1/c": 1}, Finished: true}); len(vs) != 0 {
		t.Fatalf("violations in a clean run: %v", vs)
	}
}

// Seed 001 R8: a removed event and an invented effect both fail the audit.
func TestRemovedEventFails(t *testing.T) {
	l := clean(t)
	l.facts = append(l.facts[:6], l.facts[7:]...) // drop stall.observed
	got := rules(Check(l.facts, Options{}))
	if !strings.Contains(got, RulePositions) || !strings.Contains(got, RuleOneStall) {
		t.Fatalf("removing a fact gave %q", got)
	}
}

func TestInventedEffectFails(t *testing.T) {
	got := rules(Check(clean(t).facts, Options{Sink: map[string]int{"r/t1/c": 1, "r/t9/forged": 1}}))
	if got != RuleEffectInLog {
		t.Fatalf("an invented effect gave %q", got)
	}
	if got := rules(Check(clean(t).facts, Options{Sink: map[string]int{"r/t1/c": 2}})); got != RuleEffectOnce {
		t.Fatalf("a doubled effect gave %q", got)
	}
}

func TestOtherRules(t *testing.T) {
	l := clean(t)
	facts := append([]events.Fact{}, l.facts[:4]...) // intended, never settled
	l2 := &runLog{t: t, facts: facts}
	l2.add(events.RunEnded{Status: events.RunErrored, Reason: "crash"})
	if got := rules(Check(l2.facts, Options{})); got != RuleSettled {
		t.Fatalf("an unsettled intent gave %q", got)
	}
	l3 := &runLog{t: t, facts: append([]events.Fact{}, l.facts[:4]...)}
	l3.add(events.RunEnded{Status: events.RunNeedsHuman, Reason: "unknown outcome of operation r/t1/c (http_call)"})
	if got := rules(Check(l3.facts, Options{})); got != "" {
		t.Fatalf("an unknown outcome surfaced to a person gave %q", got)
	}
	if got := rules(Check(l.facts[:3], Options{Finished: true})); got != RuleEndedOnce {
		t.Fatalf("a started run that never ended gave %q", got)
	}
	l.add(events.RunEnded{Status: events.RunDone, Reason: "again"})
	if got := rules(Check(l.facts, Options{})); got != RuleEndedOnce {
		t.Fatalf("ending twice gave %q", got)
	}
}
