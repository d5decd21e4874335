package step

import (
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// An operation of unknown outcome is named in the run's end, which then
// needs a person, except that a cancel stays a cancel; an end that names
// it already is left alone.
func TestSurfaceUnknownNamesEveryOperation(t *testing.T) {
	args := events.DigestOf([]byte(`{"url":"http://127.0.0.1/order"}`))
	unknown := func(turn uint32, id events.CallID) events.DispatchCompleted {
		return events.DispatchCompleted{Turn: turn, Output: "{}", Error: &events.ToolError{Code: "OUTCOME_UNKNOWN", Message: "the answer was lost"},
			Dispatch: events.CompletedDispatch{CallID: id, EvidenceRef: events.EvidenceRef("t1/" + string(id)), Tool: "http_call",
				Disposition: events.DispositionExecuted, Mutation: events.MutationNotApplicable, Outcome: events.OutcomeUnknown,
				Verification: events.NotVerifier()}}
	}
	facts := factsOf(t,
		events.TurnStarted{Turn: 1, ContextDigest: args, Reserve: 1},
		events.DispatchIntended{Turn: 1, CallID: "c1", Tool: "http_call", OperationID: "r1/t1/c1", ArgsDigest: args, Effect: events.EffectExternal},
		unknown(1, "c1"),
		unknown(1, "c2"), // never intended: not an operation this run sent
		events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r1", TaskGeneration: 1, Turn: 1, EvidencePosition: 5, ActorIntent: events.Continue(),
			Dispatches: []events.CompletedDispatch{unknown(1, "c1").Dispatch, unknown(1, "c2").Dispatch}}},
	)
	ops := UnknownOperations(facts)
	if len(ops) != 1 || ops[0].Intended.OperationID != "r1/t1/c1" || ops[0].Note != "the answer was lost" {
		t.Fatalf("unknown operations %+v", ops)
	}
	want := "unknown outcome of operation r1/t1/c1 (http_call, arguments " + string(args) + "): the answer was lost; " +
		"it may or may not have taken effect: check the sink for Idempotency-Key r1/t1/c1"
	if got := ops[0].Reason(); got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	if end := SurfaceUnknown(Ending{events.RunDone, "done"}, facts); end.Status != events.RunNeedsHuman || end.Reason != "done; "+want {
		t.Errorf("a done run with an unknown operation: %+v", end)
	}
	if end := SurfaceUnknown(Ending{events.RunCancelled, "cancelled"}, facts); end.Status != events.RunCancelled || !strings.Contains(end.Reason, "r1/t1/c1") {
		t.Errorf("a cancel stays a cancel and names the operation: %+v", end)
	}
	named := Ending{events.RunNeedsHuman, want}
	if end := SurfaceUnknown(named, facts); end != named {
		t.Errorf("an end that names the operation changed: %+v", end)
	}
	if refs := LastEvidence(facts); !slices.Equal(refs, []events.EvidenceRef{"t1/c1", "t1/c2"}) {
		t.Errorf("last evidence %v", refs)
	}
	if LastEvidence(facts[:3]) != nil {
		t.Error("evidence without a completed turn")
	}
}

// A spent budget ends a run exhausted with the limit as its reason, apart
// from the stop decider's incomplete (a stall stop), and its handoff says
// which budget to raise.
func TestSpentBudgetEndsExhausted(t *testing.T) {
	for _, limit := range []string{ReasonStepLimit, ReasonInputTokenLimit, ReasonOutputTokenLimit, ReasonBudgetPreflight, ReasonReservationExceeded, ReasonWallLimit} {
		if end := Exhausted(limit); end.Status != events.RunExhausted || end.Reason != limit {
			t.Errorf("%s: %+v", limit, end)
		}
	}
	if end := Finished(events.StopFinish{Status: events.FinishIncomplete, Reason: "stall: repeated_failure"}); end.Status != events.RunIncomplete {
		t.Errorf("a stall stop ended %s, want incomplete", end.Status)
	}
	if a := NextAction(events.RunExhausted); a == NextAction(events.RunIncomplete) || !strings.Contains(a, "budget") {
		t.Errorf("the handoff of an exhausted run: %q", a)
	}
}

// Every status's handoff names a next action: done, errored, needs_human
// and exhausted each their own, the statuses that leave the work unfinished
// without a cause of their own (blocked, incomplete, cancelled) one to
// look at the last observation.
func TestEveryEndingHasANextAction(t *testing.T) {
	seen := map[string]events.RunStatus{}
	for _, s := range events.RunStatuses() {
		a := NextAction(s)
		switch s {
		case events.RunBlocked, events.RunIncomplete, events.RunCancelled:
			if !strings.HasPrefix(a, "inspect the last observation") {
				t.Errorf("%s: %q", s, a)
			}
			continue
		}
		if other, ok := seen[a]; ok || a == "" {
			t.Errorf("%s: %q, as %q's", s, a, other)
		}
		seen[a] = s
	}
}
