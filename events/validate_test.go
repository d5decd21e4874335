package events_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
)

// wantFieldError asserts that err is a *FieldError classified as sentinel,
// about kind (or no kind) and the field path field, and that its message
// names both.
func wantFieldError(t testing.TB, err error, sentinel error, kind events.Kind, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want %v at %s", sentinel, field)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error %q is not %v", err, sentinel)
	}
	var fe *events.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %q (%T) is not a *FieldError", err, err)
	}
	if fe.Field != field {
		t.Errorf("field %q, want %q (error %q)", fe.Field, field, err)
	}
	if fe.Kind != kind {
		t.Errorf("kind %q, want %q (error %q)", fe.Kind, kind, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, field) || !strings.Contains(msg, string(kind)) {
		t.Errorf("message %q does not name kind %q and field %q", msg, kind, field)
	}
}

// newFact builds a fact from a body with a valid envelope.
func newFact(b events.Body) (events.Fact, error) { return events.NewFact(validMeta(b.Kind(), 2), b) }

// mustNewFact is newFact for bodies that must be accepted.
func mustNewFact(t testing.TB, b events.Body) events.Fact {
	t.Helper()
	f, err := newFact(b)
	if err != nil {
		t.Fatalf("valid %s refused: %v", b.Kind(), err)
	}
	return f
}

func finishDecision(f events.StopFinish) events.StopDecided {
	return events.StopDecided{Decision: events.StopDecision{DecisionID: "dec-1", Turn: 1, TaskGeneration: 1, Result: events.Finish(f)}}
}

func TestDoneFinishWithUnmetRefused(t *testing.T) {
	done := events.StopFinish{Status: events.FinishDone, Unmet: []events.RequirementID{"req-tests"}, Reason: "looks done"}
	_, err := newFact(finishDecision(done))
	wantFieldError(t, err, events.ErrInvalidField, events.KindStopDecided, "body.decision.result.unmet")

	// Honest endings may leave requirements unmet; done without unmet is fine.
	blocked := done
	blocked.Status = events.FinishBlocked
	mustNewFact(t, finishDecision(blocked))
	done.Unmet = nil
	mustNewFact(t, finishDecision(done))
}

func gradeVerdict(result events.VerdictResult, vetoes ...events.GradeVeto) events.GradeVerdict {
	return events.GradeVerdict{Verdict: events.GraderVerdict{
		AttemptID: goldenRun, SnapshotID: digest("snapshot"), Revision: 1, Vetoes: vetoes, Result: result,
	}}
}

func TestPassedVerdictWithBindingVetoRefused(t *testing.T) {
	soft := events.GradeVeto{Instrument: "lint", Requirement: "req-style", Reason: "long line"}
	hard := events.GradeVeto{Instrument: "review", Requirement: "req-tests", Reason: "test deleted", Binding: true}
	_, err := newFact(gradeVerdict(events.VerdictOK(), soft, hard))
	wantFieldError(t, err, events.ErrInvalidField, events.KindGradeVerdict, "body.verdict.vetoes[1]")

	mustNewFact(t, gradeVerdict(events.VerdictOK(), soft))
	mustNewFact(t, gradeVerdict(events.VerdictFail(), soft, hard))
}

func TestPendingVerdictNeedsInstruments(t *testing.T) {
	_, err := newFact(gradeVerdict(events.VerdictWaiting()))
	wantFieldError(t, err, events.ErrMissingField, events.KindGradeVerdict, "body.verdict.result.instruments")
	_, err = newFact(gradeVerdict(events.VerdictWaiting("judge", "")))
	wantFieldError(t, err, events.ErrMissingField, events.KindGradeVerdict, "body.verdict.result.instruments[1]")
	mustNewFact(t, gradeVerdict(events.VerdictWaiting("judge")))
}

func control(sig events.Signal) events.ControlAccepted {
	return events.ControlAccepted{Control: events.ControlRef{ID: "ctl-1", Signal: sig}}
}

func TestSteerControlNeedsInstruction(t *testing.T) {
	_, err := newFact(control(events.SignalSteer))
	wantFieldError(t, err, events.ErrMissingField, events.KindControlAccepted, "body.instruction")
	steer := control(events.SignalSteer)
	steer.Instruction = "also update the changelog"
	mustNewFact(t, steer)
}

func TestApproveNeedsCallIDAndArgsDigest(t *testing.T) {
	for _, sig := range []events.Signal{events.SignalApprove, events.SignalReject} {
		t.Run(string(sig), func(t *testing.T) {
			c := control(sig)
			c.ArgsDigest = digest("args")
			_, err := newFact(c)
			wantFieldError(t, err, events.ErrMissingField, events.KindControlAccepted, "body.call_id")

			c = control(sig)
			c.CallID = "call-4"
			_, err = newFact(c)
			wantFieldError(t, err, events.ErrMissingField, events.KindControlAccepted, "body.args_digest")

			c.ArgsDigest = "sha256:deploy"
			_, err = newFact(c)
			wantFieldError(t, err, events.ErrInvalidField, events.KindControlAccepted, "body.args_digest")

			c.ArgsDigest = digest("args")
			mustNewFact(t, c)
		})
	}
	// cancel names no call.
	mustNewFact(t, control(events.SignalCancel))
}

func TestControlNeedsKnownSignal(t *testing.T) {
	_, err := newFact(control("pause"))
	wantFieldError(t, err, events.ErrInvalidField, events.KindControlAccepted, "body.control.signal")
	_, err = newFact(control(""))
	wantFieldError(t, err, events.ErrMissingField, events.KindControlAccepted, "body.control.signal")
}

func TestGradeConflictNamesEarlierRevision(t *testing.T) {
	conflict := func(rev, with uint32) events.GradeConflict {
		return events.GradeConflict{SnapshotDigest: digest("snapshot"), Revision: rev, ConflictsWith: with, Instrument: "judge", Reason: "disagrees"}
	}
	for _, tc := range []struct{ rev, with uint32 }{{2, 2}, {2, 3}, {1, 1}} {
		_, err := newFact(conflict(tc.rev, tc.with))
		wantFieldError(t, err, events.ErrInvalidField, events.KindGradeConflict, "body.conflicts_with")
	}
	_, err := newFact(conflict(2, 0))
	wantFieldError(t, err, events.ErrInvalidField, events.KindGradeConflict, "body.conflicts_with")
	mustNewFact(t, conflict(3, 1))
}

func TestModelRepliedDuplicateCallIDsRefused(t *testing.T) {
	call := func(id events.CallID) events.ToolCall {
		return events.ToolCall{ID: id, Name: "run_tests", ArgsDigest: digest("{}")}
	}
	b := events.ModelReplied{Turn: 1, Provider: "anthropic", Calls: []events.ToolCall{call("a"), call("b"), call("a")}}
	_, err := newFact(b)
	wantFieldError(t, err, events.ErrInvalidField, events.KindModelReplied, "body.calls[2].id")
	b.Calls[2] = call("c")
	mustNewFact(t, b)
}

func TestSuiteReportCountsAddUp(t *testing.T) {
	b := events.SuiteReported{ReportDigest: digest("report"), Attempts: 5, Passed: 2, Failed: 1, Pending: 1}
	_, err := newFact(b)
	wantFieldError(t, err, events.ErrInvalidField, events.KindSuiteReported, "body.attempts")
	b.Excluded = 1
	mustNewFact(t, b)

	// The sum is taken without overflow.
	b = events.SuiteReported{ReportDigest: digest("report"), Attempts: 0, Passed: 1 << 31, Failed: 1 << 31}
	_, err = newFact(b)
	wantFieldError(t, err, events.ErrInvalidField, events.KindSuiteReported, "body.attempts")
}

func TestProducerMustOwnKind(t *testing.T) {
	owners := []events.Owner{events.OwnerSubmitter, events.OwnerRunner, events.OwnerStaller, events.OwnerDecider, events.OwnerGrader, events.OwnerMeter}
	for _, c := range goldenFacts(t) {
		k := c.fact.Kind()
		for _, o := range owners {
			f := c.fact
			f.Producer.Service = o
			err := f.Validate()
			if o == k.Owner() {
				if err != nil {
					t.Errorf("%s by its owner %s refused: %v", k, o, err)
				}
				continue
			}
			wantFieldError(t, err, events.ErrInvalidField, k, "producer.service")
		}
	}
}

func TestSuiteScopedFactsUseSuiteScope(t *testing.T) {
	b := events.SuiteReported{ReportDigest: digest("report")}
	m := validMeta(b.Kind(), 1)
	m.TaskGeneration = 1
	_, err := events.NewFact(m, b)
	wantFieldError(t, err, events.ErrInvalidField, events.KindSuiteReported, "task_generation")

	m = validMeta(b.Kind(), 1)
	m.Run = goldenRun
	_, err = events.NewFact(m, b)
	wantFieldError(t, err, events.ErrInvalidField, events.KindSuiteReported, "run")

	f, err := events.NewFact(validMeta(b.Kind(), 1), b)
	if err != nil {
		t.Fatal(err)
	}
	if subj, _ := f.Subject(); subj != "fact."+goldenSuite+"._suite.suite.reported" {
		t.Errorf("subject %q", subj)
	}
}

func TestValidateRefusesNewerSchema(t *testing.T) {
	f := goldenFact(t, "run_claimed")
	f.Schema = f.Kind().Version() + 1
	wantFieldError(t, f.Validate(), events.ErrUnsupportedVersion, events.KindRunClaimed, "schema")
}

func TestNewFactStampsSchemaAndTime(t *testing.T) {
	m := validMeta(events.KindRunClaimed, 1)
	m.At = time.Time{}
	before := time.Now()
	f, err := events.NewFact(m, events.RunClaimed{Runner: "runner-a", Lease: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f.Schema != events.KindRunClaimed.Version() || f.Schema == 0 {
		t.Errorf("schema %d, want %d", f.Schema, events.KindRunClaimed.Version())
	}
	if f.At.Location() != time.UTC || f.At.Before(before.Add(-time.Second)) || f.At != f.At.Round(0) {
		t.Errorf("at %v: want now, in UTC, without a monotonic reading", f.At)
	}
	if f.ID == goldenID(0) || f.ID.Time() == 0 {
		t.Errorf("no fresh ID: %s", f.ID)
	}
	if _, err := events.NewFact(m, nil); err == nil {
		t.Error("a fact without a body was accepted")
	}
}

// TestEveryErrorNamesKindAndField breaks one required field of every kind
// and checks that the error names the kind and the full field path, through
// NewFact and through ValidateBody.
func TestEveryErrorNamesKindAndField(t *testing.T) {
	broken := map[events.Kind]struct {
		body     events.Body
		sentinel error
		field    string
	}{
		events.KindSuiteSubmitted: {events.SuiteSubmitted{Name: "n", SpecDigest: digest("s"), Cases: []events.Ref{{ID: "c"}}},
			events.ErrMissingField, "body.cases[0].digest"},
		events.KindRunRequested:     {events.RunRequested{Case: "c", CaseDigest: digest("c")}, events.ErrMissingField, "body.treatment"},
		events.KindRunClaimed:       {events.RunClaimed{Runner: "r"}, events.ErrInvalidField, "body.lease"},
		events.KindTurnStarted:      {events.TurnStarted{Turn: 1, ContextDigest: "sha256:"}, events.ErrInvalidField, "body.context_digest"},
		events.KindModelReplied:     {events.ModelReplied{Turn: 1, Provider: "p", Calls: []events.ToolCall{{ID: "a", ArgsDigest: digest("{}")}}}, events.ErrMissingField, "body.calls[0].name"},
		events.KindDispatchIntended: {events.DispatchIntended{Turn: 1, CallID: "a", Tool: "t", OperationID: "o", ArgsDigest: digest("{}"), Effect: "network"}, events.ErrInvalidField, "body.effect"},
		events.KindDispatchComplete: {events.DispatchCompleted{Turn: 1, Dispatch: events.CompletedDispatch{
			CallID: "a", EvidenceRef: "e", Disposition: events.DispositionExecuted, Mutation: events.MutationApplied,
			Verification: events.Failed(1, true, events.Diagnostic{File: "x.go"}),
		}}, events.ErrMissingField, "body.dispatch.verification.diagnostics[0].message"},
		events.KindTurnCompleted: {events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r", TaskGeneration: 1, Turn: 1, EvidencePosition: 1,
			ActorIntent: events.ProposeDone("e-1", "")}}, events.ErrMissingField, "body.evidence.actor_intent.evidence[1]"},
		events.KindStallObserved: {events.StallObserved{Turn: 1, Observation: events.StallObservation{Position: 1,
			Action: ptr(events.Escalate(events.StallEscalate{Cause: "c"}))}}, events.ErrMissingField, "body.observation.action.target"},
		events.KindStopDecided: {events.StopDecided{Decision: events.StopDecision{DecisionID: "d", Turn: 1, TaskGeneration: 1,
			Result: events.Finish(events.StopFinish{Status: "maybe"})}}, events.ErrInvalidField, "body.decision.result.status"},
		events.KindControlAccepted: {events.ControlAccepted{Control: events.ControlRef{Signal: events.SignalCancel}}, events.ErrMissingField, "body.control.id"},
		events.KindTaskGeneration:  {events.TaskGenerationStarted{Generation: 2}, events.ErrMissingField, "body.instruction"},
		events.KindRunEnded:        {events.RunEnded{Status: events.RunDone, Reason: "r", LastEvidence: []events.EvidenceRef{""}}, events.ErrMissingField, "body.last_evidence[0]"},
		events.KindCandidateSealed: {events.CandidateSealed{}, events.ErrMissingField, "body.snapshot_digest"},
		events.KindGradeInstrument: {events.GradeInstrument{SnapshotDigest: digest("s"), Result: events.InstrumentResult{Instrument: "i", Version: "1", Outcome: "great"}},
			events.ErrInvalidField, "body.result.outcome"},
		events.KindGradeVerdict: {gradeVerdict(events.VerdictAbstain("")), events.ErrMissingField, "body.verdict.result.reason"},
		events.KindGradeConflict: {events.GradeConflict{SnapshotDigest: digest("s"), Revision: 2, ConflictsWith: 1, Instrument: "judge"},
			events.ErrMissingField, "body.reason"},
		events.KindSuiteReported:   {events.SuiteReported{}, events.ErrMissingField, "body.report_digest"},
		events.KindSuiteStopped:    {events.SuiteStopped{Comparison: "a vs b", Reason: "luck", Pairs: 3, Confidence: 950}, events.ErrInvalidField, "body.reason"},
		events.KindSuiteControlled: {events.SuiteControlled{ID: "c", Action: "stop", From: "ops"}, events.ErrInvalidField, "body.action"},
		events.KindContextSummarised: {events.ContextSummarised{Turn: 3, From: 1, Through: 3, RequestDigest: digest("r"), Provider: "p"},
			events.ErrInvalidField, "body.through"},
	}
	for _, k := range events.Kinds() {
		tc, ok := broken[k]
		if !ok {
			t.Errorf("no broken body for kind %s", k)
			continue
		}
		t.Run(string(k), func(t *testing.T) {
			_, err := newFact(tc.body)
			wantFieldError(t, err, tc.sentinel, k, tc.field)
			wantFieldError(t, events.ValidateBody(tc.body), tc.sentinel, k, tc.field)
		})
	}
}
