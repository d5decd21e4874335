package audit

import (
	"cmp"
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

type runLog struct {
	t          *testing.T
	facts      []events.Fact
	suite, run string // "s" and "r" when empty
}

func (l *runLog) add(b events.Body) {
	l.t.Helper()
	suite, run := cmp.Or(l.suite, "s"), cmp.Or(l.run, "r")
	pos := uint64(len(l.facts) + 1)
	gen := uint32(1)
	if b.Kind().SuiteScoped() {
		run, gen = events.SuiteScope, 0
		pos = 1
		for _, f := range l.facts {
			if f.Run == events.SuiteScope {
				pos++
			}
		}
	} else {
		pos = 1
		for _, f := range l.facts {
			if f.Run == run {
				pos++
			}
		}
	}
	f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: gen, Position: pos,
		Producer: events.Producer{Service: b.Kind().Owner(), Instance: "t"}}, b)
	if err != nil {
		l.t.Fatal(err)
	}
	l.facts = append(l.facts, f)
}

// last is the fact added last.
func (l *runLog) last() events.Fact { return l.facts[len(l.facts)-1] }

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
	res := events.InstrumentResult{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed, Detail: "exit 1"}
	l.add(events.GradeInstrument{SnapshotDigest: d, Result: res})
	veto := events.GradeVeto{Instrument: "tests", Requirement: "tests", Reason: "exit 1", Binding: true,
		Evidence: []events.EvidenceRef{events.EvidenceRef(l.last().ID.String())}}
	l.add(events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "r", SnapshotID: d, Revision: 1,
		Instruments: []events.InstrumentResult{res}, Vetoes: []events.GradeVeto{veto}, Result: events.VerdictFail()}})
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

// An effect only the sink saw names its suite and run when its operation
// names one run the log holds, and else says only the sink knows it: a run
// ID two suites share names neither.
func TestASinkOnlyEffectNamesWhatIsKnown(t *testing.T) {
	sink := map[string]int{"r/t1/c": 1, "r/t9/forged": 1, "forged": 2}
	vs := Check(clean(t).facts, Options{Sink: sink})
	if len(vs) != 2 {
		t.Fatalf("want 2 violations, got %v", vs)
	}
	if vs[0].Suite != "" || vs[0].Run != "" || !strings.HasPrefix(vs[0].String(), "sink: effect-in-log: the sink holds 2 effect(s) of operation forged,") {
		t.Errorf("an operation naming no run: %+v, printed %q", vs[0], vs[0])
	}
	if vs[1].Suite != "s" || vs[1].Run != "r" || !strings.HasPrefix(vs[1].String(), "s/r: effect-in-log: ") {
		t.Errorf("an operation of run r: %+v, printed %q", vs[1], vs[1])
	}

	twice := clean(t).facts
	for _, f := range clean(t).facts {
		f.Suite = "s2"
		twice = append(twice, f)
	}
	vs = Check(twice, Options{Sink: map[string]int{"r/t1/c": 1, "r/t9/forged": 1}})
	var inLog []Violation
	for _, v := range vs {
		if v.Rule == RuleEffectInLog {
			inLog = append(inLog, v)
		}
	}
	if len(inLog) != 1 || inLog[0].Suite != "" || inLog[0].Run != "" {
		t.Errorf("an operation of a run two suites hold: %+v", inLog)
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

// lostAnswerRetried is the log the runner wrote before unknown outcomes
// were reconciled: an order whose answer timed out is settled as a
// retryable I/O error, and the model's second order is sent under a new
// operation ID in the next turn.
func lostAnswerRetried(t *testing.T) *runLog {
	l := &runLog{t: t}
	d := events.DigestOf([]byte("order"))
	l.add(events.RunClaimed{Runner: "a", Lease: 1})
	for turn := uint32(1); turn <= 2; turn++ {
		op := fmt.Sprintf("r/t%d/order", turn)
		l.add(events.TurnStarted{Turn: turn, ContextDigest: d})
		l.add(events.ModelReplied{Turn: turn, Provider: "p", Calls: []events.ToolCall{{ID: "order", Name: "http_call", ArgsDigest: d}}})
		l.add(events.DispatchIntended{Turn: turn, CallID: "order", Tool: "http_call", OperationID: op, ArgsDigest: d, Effect: events.EffectExternal})
		cd := events.CompletedDispatch{CallID: "order", EvidenceRef: events.EvidenceRef(fmt.Sprintf("t%d/order", turn)), Tool: "http_call",
			Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Verification: events.NotVerifier()}
		var tErr *events.ToolError
		if turn == 1 {
			cd.Mutation = events.MutationNotApplied
			tErr = &events.ToolError{Code: "IO_ERROR", Message: "POST: context deadline exceeded", Retryable: true}
		}
		l.add(events.DispatchCompleted{Turn: turn, Dispatch: cd, Error: tErr})
		l.add(events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r", TaskGeneration: 1, Turn: turn, EvidencePosition: uint64(len(l.facts) + 1),
			ActorIntent: events.Continue(), Dispatches: []events.CompletedDispatch{cd}}})
		l.add(events.StallObserved{Turn: turn, Observation: events.StallObservation{Position: uint64(len(l.facts))}})
		result := events.ContinueWith("")
		if turn == 2 {
			result = events.Finish(events.StopFinish{Status: events.FinishDone, Reason: "done"})
		}
		l.add(events.StopDecided{Decision: events.StopDecision{DecisionID: fmt.Sprintf("d%d", turn), Turn: turn, TaskGeneration: 1, Result: result}})
	}
	l.add(events.RunEnded{Status: events.RunDone, Reason: "done"})
	return l
}

// An external effect dispatched while an earlier one of the run had an
// unknown outcome (its answer was lost) is a blind retry; with the sink's
// records showing both took effect, it is a doubled effect.
func TestEffectWhileAnotherIsUnknownFails(t *testing.T) {
	l := lostAnswerRetried(t)
	if got := rules(Check(l.facts, Options{})); got != RuleEffectWhileUnknown {
		t.Fatalf("a second order sent while the first was unknown gave %q", got)
	}
	got := rules(Check(l.facts, Options{Sink: map[string]int{"r/t1/order": 1, "r/t2/order": 1}}))
	if !strings.Contains(got, RuleEffectWhileUnknown) || !strings.Contains(got, RuleEffectTwice) {
		t.Fatalf("two orders at the sink, the first unknown in the log, gave %q", got)
	}
}

// The same log written today: the first order is settled once its
// outcome is known (a status lookup found it applied): then a second order
// is the model's informed decision, not a retry.
func TestEffectAfterReconciliationPasses(t *testing.T) {
	l := lostAnswerRetried(t)
	for i, f := range l.facts {
		if dc, ok := f.Body.(events.DispatchCompleted); ok && dc.Turn == 1 {
			dc.Error, dc.Dispatch.Outcome, dc.Dispatch.Mutation = nil, events.OutcomeApplied, events.MutationNotApplicable
			g, err := events.NewFact(events.Meta{Suite: f.Suite, Run: f.Run, TaskGeneration: 1, Position: f.Position, Producer: f.Producer}, dc)
			if err != nil {
				t.Fatal(err)
			}
			l.facts[i] = g
		}
	}
	if vs := Check(l.facts, Options{Sink: map[string]int{"r/t1/order": 1, "r/t2/order": 1}}); len(vs) != 0 {
		t.Fatalf("a reconciled first order gave %v", vs)
	}
}

// Only graders append to a run after its end.
func TestFactAfterEndFails(t *testing.T) {
	l := clean(t)
	l.add(events.StallObserved{Turn: 1, Observation: events.StallObservation{Position: 12}})
	if got := rules(Check(l.facts, Options{})); !strings.Contains(got, RuleNoStrayFacts) {
		t.Fatalf("stall.observed after run.ended gave %q", got)
	}
}

// The sink applied an operation the log settled as refused: the log says
// less than happened.
func TestEffectSettledNotAppliedButAppliedFails(t *testing.T) {
	l := clean(t)
	for i, f := range l.facts {
		if dc, ok := f.Body.(events.DispatchCompleted); ok {
			dc.Dispatch.Outcome = events.OutcomeNotApplied
			dc.Error = &events.ToolError{Code: "HTTP_STATUS", Message: "409 Conflict"}
			g, err := events.NewFact(events.Meta{Suite: f.Suite, Run: f.Run, TaskGeneration: 1, Position: f.Position, Producer: f.Producer}, dc)
			if err != nil {
				t.Fatal(err)
			}
			l.facts[i] = g
		}
	}
	if got := rules(Check(l.facts, Options{Sink: map[string]int{"r/t1/c": 1}})); got != RuleEffectRecorded {
		t.Fatalf("an effect the log settled as not applied gave %q", got)
	}
	if got := rules(Check(l.facts, Options{Sink: map[string]int{}})); got != "" {
		t.Fatalf("a refused effect the sink never applied gave %q", got)
	}
}

// cancelledAfterATurn is a run whose one turn completed and whose cancel
// was accepted before the stall handler looked at that turn: the run ends
// without the turn's stall.observed and stop.decided. With observed, the
// stall handler was quicker and only the decision is missing.
func cancelledAfterATurn(t *testing.T, observed bool) *runLog {
	l := &runLog{t: t}
	d := events.DigestOf([]byte("x"))
	l.add(events.RunClaimed{Runner: "a", Lease: 1})
	l.add(events.TurnStarted{Turn: 1, ContextDigest: d})
	l.add(events.ModelReplied{Turn: 1, Provider: "p"})
	l.add(events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r", TaskGeneration: 1, Turn: 1, EvidencePosition: 3, ActorIntent: events.Continue()}})
	if observed {
		l.add(events.StallObserved{Turn: 1, Observation: events.StallObservation{Position: 4}})
	}
	l.add(events.ControlAccepted{Control: events.ControlRef{ID: "c1", Signal: events.SignalCancel}, Reason: "suite_cancelled: x"})
	l.add(events.RunEnded{Status: events.RunCancelled, Reason: "cancelled: suite_cancelled: x"})
	return l
}

// A cancel may be accepted at any instant, also between a turn's
// completion and its observation: the run's last turn then goes
// unobserved, and the log says why (the accepted cancel right after it).
func TestACancelBeforeTheLastTurnIsObservedPasses(t *testing.T) {
	for _, observed := range []bool{false, true} {
		if vs := Check(cancelledAfterATurn(t, observed).facts, Options{}); len(vs) != 0 {
			t.Errorf("stall observed %v: %v", observed, vs)
		}
	}
}

// Without the accepted cancel, the same unobserved turn is a fact lost.
func TestAnUnobservedTurnWithoutACancelFails(t *testing.T) {
	l := cancelledAfterATurn(t, false)
	var kept []events.Fact
	for _, f := range l.facts {
		if f.Kind() != events.KindControlAccepted {
			kept = append(kept, f)
		}
	}
	if got := rules(Check(kept, Options{})); !strings.Contains(got, RuleOneStall) || !strings.Contains(got, RuleOneDecision) {
		t.Fatalf("an unobserved turn without a cancel gave %q", got)
	}
}
