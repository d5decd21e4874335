package stop_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/decider/stop"
)

// A natural finish (no tool calls, no evidence) is a proposal: with a
// required check that never ran, the decider continues and names the check
// rather than invent its result.
func TestNaturalFinishIsAProposal(t *testing.T) {
	r := newRun(t)
	n := r.step(events.ProposeDone())
	c := continueOf(t, r.decide(n, nil, testsPolicy()))
	if !slices.Equal(c.Unmet, []events.RequirementID{"tests"}) || !contains(c.Feedback, `run check "tests"`, "./check.sh") {
		t.Errorf("continue %+v", c)
	}
}

// Every cited ref must exist in this run; otherwise continue, listing what
// could have been cited.
func TestCitationsMustExistInRun(t *testing.T) {
	r := newRun(t)
	r.step(events.Continue(), edit("fix"), pass("tests"))
	n := r.step(events.ProposeDone("t9/call-1"), claim())
	c := continueOf(t, r.decide(n, nil, testsPolicy()))
	if !contains(c.Feedback, "t9/call-1 does not exist", "could be cited", "t1/call-2 (run_command, check tests, passed at epoch 2)", "t1/call-1 (edit_file") {
		t.Errorf("feedback:\n%s", c.Feedback)
	}
	if strings.Contains(c.Feedback, "t2/call-1") {
		t.Errorf("the claim itself is listed as citable:\n%s", c.Feedback)
	}
}

// A cited ref must be a completed, executed dispatch: not harness feedback
// (a stall or stop fact), not the claim itself, not a refused call.
func TestCitationsMustBeCompletedDispatches(t *testing.T) {
	p := testsPolicy()
	r := newRun(t)
	n1 := r.step(events.Continue(), rejected("x"), pass("tests"))
	d1 := r.decide(n1, stallRetry("idle_turns"), p)
	var stallFact events.Fact
	for _, f := range r.facts {
		if f.Kind() == events.KindStallObserved {
			stallFact = f
		}
	}
	harness := events.EvidenceRef(stallFact.ID.String())
	n2 := r.step(events.ProposeDone(harness, ref(2, 1), ref(1, 1)), claim())
	c := continueOf(t, r.decide(n2, nil, p))
	for _, want := range []string{
		string(harness) + " names a stall.observed fact, not a completed dispatch",
		"t2/call-1 is the completion claim itself",
		"t1/call-1 was rejected, not executed",
	} {
		if !strings.Contains(c.Feedback, want) {
			t.Errorf("feedback lacks %q:\n%s", want, c.Feedback)
		}
	}
	if d1.DecisionID != "r1/stop.decided/1" {
		t.Errorf("decision id %q", d1.DecisionID)
	}
}

// Evidence from an older task generation is stale: a steer makes it
// uncitable, and a proposal made before the steer is not judged done.
func TestSteerMakesOlderCompletionStale(t *testing.T) {
	p := testsPolicy()
	r := newRun(t)
	n := r.step(events.ProposeDone(ref(1, 2)), edit("fix"), pass("tests"), claim())
	r.steer("also handle negative numbers")
	d := r.decide(n, nil, p)
	c := continueOf(t, d)
	if d.TaskGeneration != 2 || !contains(c.Feedback, "generation 1", "generation 2", "negative numbers") {
		t.Errorf("decision gen %d feedback %q", d.TaskGeneration, c.Feedback)
	}
	// Citing the old pass in the new generation is stale too, and the check
	// must run again in this generation.
	n = r.step(events.ProposeDone(ref(1, 2)), claim())
	c = continueOf(t, r.decide(n, nil, p))
	if !contains(c.Feedback, "t1/call-2 belongs to task generation 1") {
		t.Errorf("feedback %q", c.Feedback)
	}
	n = r.step(events.ProposeDone(), claim())
	c = continueOf(t, r.decide(n, nil, p))
	if !contains(c.Feedback, `check "tests" has not run`) {
		t.Errorf("feedback %q", c.Feedback)
	}
	n = r.step(events.ProposeDone(ref(4, 1)), pass("tests"), claim())
	if f := finishOf(t, r.decide(n, nil, p)); f.Status != events.FinishDone {
		t.Errorf("finish %+v", f)
	}
	// A blocked report from before a steer is stale as well.
	r = newRun(t)
	n = r.step(events.ReportBlocked("no network", "tests"))
	r.steer("work offline")
	continueOf(t, r.decide(n, nil, p))
}

// A steer's acceptance alone already makes the turn's proposal stale: a
// decision taken between control.accepted and its task.generation must
// not finish the run on the older generation's evidence.
func TestAcceptedSteerMakesCompletionStaleBeforeItsGeneration(t *testing.T) {
	p := testsPolicy()
	r := newRun(t)
	n := r.step(events.ProposeDone(ref(1, 2)), edit("fix"), pass("tests"), claim())
	r.add(events.OwnerRunner, events.ControlAccepted{Control: events.ControlRef{ID: "ctl-1", Signal: events.SignalSteer}, Instruction: "also handle zero"})
	d := r.decide(n, nil, p)
	if c := continueOf(t, d); d.TaskGeneration != 2 || !contains(c.Feedback, "generation 1", "generation 2", "also handle zero") {
		t.Errorf("decision gen %d feedback %q", d.TaskGeneration, c.Feedback)
	}
}

// Done requires every required check passed at the current source epoch:
// a pass before the latest edit is stale.
func TestDoneNeedsRequiredChecksAtCurrentEpoch(t *testing.T) {
	r := newRun(t)
	r.step(events.Continue(), edit("fix"), pass("tests"))
	n := r.step(events.ProposeDone(ref(1, 2)), edit("tidy"), claim())
	c := continueOf(t, r.decide(n, nil, testsPolicy()))
	if !slices.Equal(c.Unmet, []events.RequirementID{"tests"}) || !contains(c.Feedback, "passed at source epoch 2", "(epoch 3)", `run check "tests"`) {
		t.Errorf("continue %+v", c)
	}
}

// A failed check blocks done, whatever the actor cites; a deferred result
// after it does not clear it.
func TestFailedCheckBlocksDone(t *testing.T) {
	r := newRun(t)
	r.step(events.Continue(), edit("fix"), fail("tests", "want 2, got 3"))
	n := r.step(events.ProposeDone(ref(1, 1)), pending("tests"), claim())
	c := continueOf(t, r.decide(n, nil, testsPolicy()))
	if !contains(c.Feedback, `check "tests" failed`, "want 2, got 3") {
		t.Errorf("feedback %q", c.Feedback)
	}
}

// The decider orders the checks (declared order) and asks for a declared
// check it has not seen.
func TestDeciderOrdersChecksAndAsksForUnseenOnes(t *testing.T) {
	p := stop.Policy{
		Checks: []stop.Check{{ID: "build", Command: "go build ./..."}, {ID: "tests", Command: "go test ./..."}, {ID: "lint", Command: "golangci-lint run"}},
		Requirements: []stop.Requirement{
			{ID: "req-lint", Check: "lint"}, {ID: "req-tests", Check: "tests"}, {ID: "req-build", Check: "build"},
		},
	}
	r := newRun(t)
	n := r.step(events.ProposeDone(), edit("fix"), pass("build"))
	c := continueOf(t, r.decide(n, nil, p))
	if !slices.Equal(c.Unmet, []events.RequirementID{"req-tests", "req-lint"}) {
		t.Errorf("unmet %v, want tests before lint (declared check order)", c.Unmet)
	}
	i, j := strings.Index(c.Feedback, `run check "tests" (go test ./...)`), strings.Index(c.Feedback, `run check "lint"`)
	if i < 0 || j < 0 || i > j {
		t.Errorf("feedback does not ask for tests, then lint:\n%s", c.Feedback)
	}
	n = r.step(events.ProposeDone(), pass("tests"), pass("lint"))
	f := finishOf(t, r.decide(n, nil, p))
	if f.Status != events.FinishDone || !slices.Equal(f.Supported, []events.RequirementID{"req-build", "req-tests", "req-lint"}) {
		t.Errorf("finish %+v", f)
	}
}

// Valid citations and passing checks at the current epoch finish done,
// citing the checks' dispatches too.
func TestDoneWithValidEvidenceAndPassingChecks(t *testing.T) {
	r := newRun(t)
	r.step(events.Continue(), read("calc.go"), edit("fix"))
	n := r.step(events.ProposeDone(ref(1, 2)), pass("tests"), claim())
	f := finishOf(t, r.decide(n, nil, testsPolicy()))
	if f.Status != events.FinishDone || len(f.Unmet) != 0 || !slices.Equal(f.Evidence, []events.EvidenceRef{ref(1, 2), ref(2, 1)}) {
		t.Errorf("finish %+v", f)
	}
}

// A judge cannot erase a check that ran and passed.
func TestJudgeCannotEraseAPassedCheck(t *testing.T) {
	p := testsPolicy()
	r := newRun(t)
	n := r.step(events.ProposeDone(), edit("fix"), pass("tests"))
	d := r.decide(n, nil, p)
	for _, o := range []stop.Opinion{
		{Reviewer: "openai/judge", Verdict: stop.VerdictObject, Objections: []events.RequirementID{"tests"}, Reason: "I doubt the tests"},
		{Reviewer: "openai/judge", Verdict: stop.VerdictObject, Reason: "looks wrong"},
	} {
		got := stop.Review(d, o, p)
		f := finishOf(t, got)
		if f.Status != events.FinishDone || !contains(f.Reason, "openai/judge objected") {
			t.Errorf("opinion %+v turned done into %+v", o, f)
		}
	}
}

// A judge's timeout or refusal leaves the decision to the deterministic
// checks, whichever way they went.
func TestJudgeTimeoutOrRefusalLeavesDecisionToChecks(t *testing.T) {
	p := testsPolicy()
	p.Requirements = append(p.Requirements, stop.Requirement{ID: "explains"})
	r := newRun(t)
	n := r.step(events.ProposeDone(ref(1, 2)), edit("fix"), pass("tests"))
	done := r.decide(n, nil, p)
	n = r.step(events.ProposeDone(), edit("more"))
	notDone := r.decide(n, nil, p)
	for _, v := range []stop.Verdict{stop.VerdictTimeout, stop.VerdictRefused, stop.VerdictApprove} {
		o := stop.Opinion{Reviewer: "openai/judge", Verdict: v, Objections: []events.RequirementID{"explains"}}
		if got := stop.Review(done, o, p); !slices.Equal(mustEncode(t, got), mustEncode(t, done)) {
			t.Errorf("%s changed a done decision: %+v", v, got.Result.Variant())
		}
		if got := stop.Review(notDone, o, p); !slices.Equal(mustEncode(t, got), mustEncode(t, notDone)) {
			t.Errorf("%s changed a continue decision", v)
		}
	}
}

// A judge objection reopens a requirement that rests only on the actor's
// evidence; a judge that is the actor's own model is ignored.
func TestJudgeObjectionReopensEvidenceOnlyRequirement(t *testing.T) {
	p := testsPolicy()
	p.Requirements = append(p.Requirements, stop.Requirement{ID: "explains"})
	r := newRun(t)
	n := r.step(events.ProposeDone(ref(1, 2)), edit("fix"), pass("tests"))
	d := r.decide(n, nil, p)
	finishOf(t, d)
	o := stop.Opinion{Reviewer: "openai/judge", Verdict: stop.VerdictObject, Reason: "the explanation is wrong"}
	c := continueOf(t, stop.Review(d, o, p))
	if !slices.Equal(c.Unmet, []events.RequirementID{"explains"}) || !contains(c.Feedback, "openai/judge", "explanation is wrong") {
		t.Errorf("continue %+v", c)
	}
	o.Reviewer = p.ActorModel
	if f := finishOf(t, stop.Review(d, o, p)); f.Status != events.FinishDone {
		t.Errorf("the actor's own model reviewed itself: %+v", f)
	}
}

// report_blocked ends blocked with its reason and unmet requirements,
// without inventing tool evidence.
func TestReportBlockedEndsBlockedWithoutInventedEvidence(t *testing.T) {
	p := testsPolicy()
	p.Requirements = append(p.Requirements, stop.Requirement{ID: "deploy"})
	r := newRun(t)
	n := r.step(events.ReportBlocked("the registry needs credentials I do not have", "deploy"), edit("fix"), pass("tests"), claim())
	f := finishOf(t, r.decide(n, nil, p))
	if f.Status != events.FinishBlocked || f.Reason != "the registry needs credentials I do not have" ||
		!slices.Equal(f.Unmet, []events.RequirementID{"deploy"}) || !slices.Equal(f.Supported, []events.RequirementID{"tests"}) || len(f.Evidence) != 0 {
		t.Errorf("finish %+v", f)
	}
}

// A truthful read-only answer finishes done when the case requires no write
// and has no required checks; when it requires a write, it does not.
func TestReadOnlyAnswerFinishesDone(t *testing.T) {
	r := newRun(t)
	r.step(events.Continue(), read("README.md"))
	n := r.step(events.ProposeDone())
	f := finishOf(t, r.decide(n, nil, stop.Policy{}))
	if f.Status != events.FinishDone || len(f.Supported) != 0 || len(f.Unmet) != 0 {
		t.Errorf("read-only answer: %+v", f)
	}
	answer := stop.Policy{Requirements: []stop.Requirement{{ID: "answer"}}}
	if f := finishOf(t, r.decide(r.step(events.ProposeDone()), nil, answer)); f.Status != events.FinishDone {
		t.Errorf("read-only answer with an evidence requirement: %+v", f)
	}
	write := stop.Policy{Requirements: []stop.Requirement{{ID: "answer"}, {ID: stop.WriteRequirement, Write: true}}}
	c := continueOf(t, r.decide(r.step(events.ProposeDone()), nil, write))
	if !slices.Equal(c.Unmet, []events.RequirementID{"answer", stop.WriteRequirement}) {
		t.Errorf("unmet %v", c.Unmet)
	}
}

// A change written back to the fixture is no applied change.
func TestRevertedWriteIsNoWrite(t *testing.T) {
	p := stop.Policy{Requirements: []stop.Requirement{{ID: stop.WriteRequirement, Write: true}}, FixtureDigest: events.DigestOf([]byte("fixture"))}
	r := newRun(t)
	n := r.step(events.ProposeDone(ref(1, 1)), edit("fix"), editTo("undo", "fixture"))
	continueOf(t, r.decide(n, nil, p))
	n = r.step(events.ProposeDone(ref(2, 1)), edit("fix again"))
	if f := finishOf(t, r.decide(n, nil, p)); f.Status != events.FinishDone || !slices.Contains(f.Evidence, ref(2, 1)) {
		t.Errorf("finish %+v", f)
	}
}

// A stall stop ends incomplete and can never become done, even with valid
// evidence and passing checks.
func TestStallStopEndsIncompleteNeverDone(t *testing.T) {
	r := newRun(t)
	n := r.step(events.ProposeDone(ref(1, 2)), edit("fix"), pass("tests"), claim())
	f := finishOf(t, r.decide(n, stallStop("idle_turns"), testsPolicy()))
	if f.Status != events.FinishIncomplete || !contains(f.Reason, "idle_turns") || !slices.Equal(f.Evidence, []events.EvidenceRef{"t1/call-1"}) {
		t.Errorf("finish %+v", f)
	}
	esc := events.Escalate(events.StallEscalate{Cause: "repeated_failure", Target: "human", Evidence: []events.EvidenceRef{"t1/call-2"}})
	f = finishOf(t, r.decide(r.step(events.ProposeDone()), &esc, testsPolicy()))
	if f.Status != events.FinishIncomplete || !contains(f.Reason, "escalated to human") {
		t.Errorf("escalate: %+v", f)
	}
}

// When the retry budget is spent the run ends with unmet needs; it never
// marks them met. The stall's unmet list and the decider's own are joined.
func TestSpentRetryBudgetEndsWithUnmetNeeds(t *testing.T) {
	p := testsPolicy()
	p.Requirements = append(p.Requirements, stop.Requirement{ID: "docs"})
	r := newRun(t)
	r.step(events.Continue(), edit("a"), fail("tests", "x"))
	r.decide(1, stallRetry("repeated_failure"), p)
	n := r.step(events.ProposeDone(ref(1, 1)), fail("tests", "x"), claim())
	f := finishOf(t, r.decide(n, stallStop("repeated_failure", "tests"), p))
	if f.Status != events.FinishIncomplete || !slices.Equal(f.Unmet, []events.RequirementID{"tests", "docs"}) || len(f.Supported) != 0 {
		t.Errorf("finish %+v", f)
	}
}

// A stall retry does not block a valid done: the work is shown, so the
// repair feedback is moot. Without a valid proposal the run continues.
func TestStallRetryDoesNotBlockValidDone(t *testing.T) {
	r := newRun(t)
	n := r.step(events.ProposeDone(ref(1, 2)), edit("fix"), pass("tests"), claim())
	if f := finishOf(t, r.decide(n, stallRetry("repeated_observation"), testsPolicy())); f.Status != events.FinishDone {
		t.Errorf("finish %+v", f)
	}
	n = r.step(events.Continue(), read("x"))
	c := continueOf(t, r.decide(n, stallRetry("repeated_observation"), testsPolicy()))
	if c.Feedback != "" {
		t.Errorf("the decider repeated the stall's feedback: %q", c.Feedback)
	}
}

// A decision arrives for every completed turn, also turns with no tool
// calls, each with its own decision ID and the current generation.
func TestDecisionForEveryTurnIncludingToolFree(t *testing.T) {
	r := newRun(t)
	p := testsPolicy()
	for i := range 4 {
		var n uint32
		if i%2 == 0 {
			n = r.step(events.Continue())
		} else {
			n = r.step(events.Continue(), read("f"))
		}
		d := r.decide(n, nil, p)
		c := continueOf(t, d)
		if d.Turn != n || d.DecisionID != "r1/stop.decided/"+strconv.Itoa(int(n)) || d.TaskGeneration != 1 || !slices.Equal(c.Unmet, []events.RequirementID{"tests"}) {
			t.Errorf("turn %d: %+v", n, d)
		}
	}
}

func mustEncode(t *testing.T, d events.StopDecision) []byte {
	t.Helper()
	f, err := events.NewFact(events.Meta{Suite: "s", Run: "r1", TaskGeneration: 1, Position: 1,
		Producer: events.Producer{Service: events.OwnerDecider, Instance: "t"}, At: time0}, events.StopDecided{Decision: d})
	if err != nil {
		t.Fatal(err)
	}
	f.ID = [16]byte{}
	b, err := events.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The core imports only events and the standard library.
func TestCoreImportsOnlyEventsAndStdlib(t *testing.T) {
	testutil.CheckPureCore(t, testutil.Module+"events")
}

var time0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
