package stall_test

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/staller/stall"
)

// Write credit only for mutation: applied. Rejected, unchanged and
// not-applied edits earn none, and leave the workspace "unchanged" for
// repeat detection.
func TestWriteCreditOnlyForAppliedMutation(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 2, 0 }))
	o := r.step(fail("tests", true, "want 2"))
	if o.Checkpoint.WriteCredit != 0 || action(o) != "none" {
		t.Fatalf("turn 1: %+v action %s", o.Checkpoint, action(o))
	}
	notApplied := edit("outside")
	notApplied.mutation = events.MutationNotApplied
	o = r.step(rejectedEdit("a"), noopEdit("b"), notApplied, fail("tests", true, "want 2"))
	if o.Checkpoint.WriteCredit != 0 {
		t.Errorf("rejected/unchanged/not-applied edits earned write credit %d", o.Checkpoint.WriteCredit)
	}
	if s := stopOf(t, o); s.Cause != stall.PatternRepeatedFailure {
		t.Errorf("edits that changed nothing hid a repeated failure on the same workspace: cause %q", s.Cause)
	}

	r = newRun(t, only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 2, 0 }))
	r.step(fail("tests", true, "want 2"))
	o = r.step(edit("fix"), fail("tests", true, "want 2"))
	if o.Checkpoint.WriteCredit != 1 {
		t.Errorf("an applied edit earned write credit %d, want 1", o.Checkpoint.WriteCredit)
	}
	if action(o) != "none" {
		t.Errorf("a failure on a changed workspace was taken for a repeat: %s", action(o))
	}
}

// A failed verification stays failed through housekeeping commands and
// deferred checks; only an executed pass of the declared check at the
// current source epoch clears it.
func TestFailureSurvivesHousekeepingAndDeferredChecks(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) {}))
	if o := r.step(fail("tests", true, "want 2")); !o.Checkpoint.OpenFailure {
		t.Fatal("a failed check left no open failure")
	}
	housekeeping := cmd("go vet ./...", "ok")
	housekeeping.result = "pass" // a passing command that is not the declared check
	notRun := pass("tests")
	notRun.result = "not_run"
	unknown := pass("tests")
	unknown.result = "unknown"
	otherCheck := pass("lint")
	for i, c := range []call{housekeeping, pending("tests"), notRun, unknown, otherCheck} {
		if o := r.step(c); !o.Checkpoint.OpenFailure {
			t.Fatalf("step %d (%s %q, result %s) cleared the failure", i, c.tool, c.args, c.result)
		}
	}
	r.step(edit("fix"))
	stale := pass("tests")
	stale.epoch = 1 // ran on the workspace before the edit
	if o := r.step(stale); !o.Checkpoint.OpenFailure {
		t.Fatal("a pass at an older source epoch cleared the failure")
	}
	if o := r.step(pass("tests")); o.Checkpoint.OpenFailure {
		t.Fatal("an executed pass at the current epoch did not clear the failure")
	}
}

// An edit made on top of a live failure owes a new verification; it is not
// one: the failure stays open and the failing-turn count is not reset.
func TestEditOnLiveFailureOwesVerification(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.FailingVerifications, p.RepairBudget = 2, 0 }))
	r.step(fail("tests", true, "want 2"))
	if o := r.step(edit("fix")); !o.Checkpoint.OpenFailure || action(o) != "none" {
		t.Fatalf("after an edit on a live failure: %+v action %s", o.Checkpoint, action(o))
	}
	s := stopOf(t, r.step(fail("tests", true, "want 3")))
	if s.Cause != stall.PatternFailingVerifications || !slices.Equal(s.Unmet, []events.RequirementID{"tests"}) {
		t.Errorf("stop %+v, want failing_verifications with tests unmet", s)
	}
}

// A clean check followed by a new edit starts a new verification episode,
// with a fresh repair budget.
func TestCleanCheckThenEditStartsNewEpisode(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 2, 2 }))
	r.step(fail("tests", true, "want 2"))
	o := r.step(fail("tests", true, "want 2"))
	retryOf(t, o)
	o = r.step(edit("fix"), pass("tests"))
	if o.Checkpoint.Episode != 1 || o.Checkpoint.RepairsUsed != 1 || o.Checkpoint.OpenFailure {
		t.Fatalf("edit then clean pass: %+v, want episode 1 with its repair spent and no failure", o.Checkpoint)
	}
	o = r.step(edit("next feature"))
	if o.Checkpoint.Episode != 2 || o.Checkpoint.RepairsUsed != 0 || o.Checkpoint.WriteCredit != 1 {
		t.Errorf("edit after a clean check: %+v, want episode 2 with no repairs used and one write", o.Checkpoint)
	}
}

// Edits while a failure remains do not reset the repair cap.
func TestEditsDuringFailureDoNotResetRepairCap(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.FailingVerifications, p.RepairBudget = 2, 1 }))
	r.step(fail("tests", true, "e1"))
	o := r.step(edit("try 1"), fail("tests", true, "e2"))
	if rt := retryOf(t, o); rt.Remaining != 0 || rt.Cause != stall.PatternFailingVerifications {
		t.Fatalf("retry %+v", rt)
	}
	o = r.step(edit("try 2"), fail("tests", true, "e3"))
	stopOf(t, o)
	if o.Checkpoint.Episode != 1 || o.Checkpoint.WriteCredit != 2 {
		t.Errorf("checkpoint %+v: edits during a live failure opened a new episode", o.Checkpoint)
	}
}

// Changed error text alone does not earn retries: a loop of edits whose
// check fails with rotating text is stopped by the verification cap.
func TestChangedErrorTextEarnsNoRetries(t *testing.T) {
	r := newRun(t, defaults())
	var got []string
	for i := range 8 {
		o := r.step(edit("attempt "+strconv.Itoa(i)), fail("tests", true, "error text version "+strconv.Itoa(i)))
		got = append(got, action(o))
		if i == 7 {
			s := stopOf(t, o)
			if s.Cause != stall.PatternFailingVerifications || !slices.Equal(s.Unmet, []events.RequirementID{"tests"}) {
				t.Errorf("stop %+v", s)
			}
		}
	}
	want := []string{"none", "none", "none", "none", "none", "retry", "retry", "stop"}
	if !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	// The same text rotating on an unchanged workspace is a repeated failure.
	r = newRun(t, only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 2, 0 }))
	r.step(fail("tests", true, "expected 2"))
	if s := stopOf(t, r.step(fail("tests", true, "expected 2 (got 3)"))); s.Cause != stall.PatternRepeatedFailure {
		t.Errorf("changed text on an unchanged workspace: cause %q", s.Cause)
	}
}

// A complete diagnostic set that shrinks is progress: turns that fix errors
// do not count against the verification cap.
func TestShrinkingCompleteDiagnosticsIsProgress(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.FailingVerifications, p.RepairBudget = 3, 0 }))
	errs := []string{"e1", "e2", "e3", "e4", "e5"}
	for i := range 5 {
		if o := r.step(edit("fix "+strconv.Itoa(i)), fail("tests", true, errs[i:]...)); action(o) != "none" {
			t.Fatalf("turn %d with %d of 5 errors left: %s", i+1, 5-i, action(o))
		}
	}
	// Stuck at one error: now the cap counts again (the first shrinking
	// run counted only its first turn).
	r.step(edit("fix 5"), fail("tests", true, "e5"))
	if s := stopOf(t, r.step(edit("fix 6"), fail("tests", true, "e5"))); s.Cause != stall.PatternFailingVerifications {
		t.Errorf("cause %q", s.Cause)
	}
}

// A partial set proves nothing about how many errors remain: shrinking
// partial sets still count against the cap.
func TestPartialDiagnosticsProveNothing(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.FailingVerifications, p.RepairBudget = 3, 0 }))
	r.step(edit("a"), fail("tests", false, "e1", "e2", "e3"))
	r.step(edit("b"), fail("tests", false, "e1", "e2"))
	if s := stopOf(t, r.step(edit("c"), fail("tests", false, "e1"))); s.Cause != stall.PatternFailingVerifications {
		t.Errorf("cause %q", s.Cause)
	}
}

// The replay cases of seed 003, with content identity in place of labels:
// the same failing check on an unchanged workspace twice in a row stops (with
// no repair budget); a changed workspace that still fails does not; a
// workspace changed back to the failing content is unchanged.
func TestRepeatedFailureOnUnchangedWorkspace(t *testing.T) {
	p := only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 2, 0 })
	t.Run("unchanged", func(t *testing.T) {
		r := newRun(t, p)
		if o := r.step(fail("tests", true, "x")); action(o) != "none" {
			t.Fatalf("first failure: %s", action(o))
		}
		s := stopOf(t, r.step(fail("tests", true, "x")))
		if s.Cause != stall.PatternRepeatedFailure || !slices.Equal(s.Evidence, []events.EvidenceRef{"t1/call-1", "t2/call-1"}) {
			t.Errorf("stop %+v", s)
		}
	})
	t.Run("housekeeping between", func(t *testing.T) {
		r := newRun(t, p)
		r.step(fail("tests", true, "x"))
		r.step(cmd("ls", "calc.go"))
		stopOf(t, r.step(fail("tests", true, "x")))
	})
	t.Run("changed workspace", func(t *testing.T) {
		r := newRun(t, p)
		r.step(editTo("a", "patch-a"), fail("tests", true, "x"))
		if o := r.step(editTo("b", "patch-b"), fail("tests", true, "x")); action(o) != "none" {
			t.Errorf("a changed workspace that still fails was stopped: %s", action(o))
		}
	})
	t.Run("changed back to the same content", func(t *testing.T) {
		r := newRun(t, p)
		r.step(editTo("a", "patch-a"), fail("tests", true, "x"))
		r.step(editTo("b", "patch-b"))
		if s := stopOf(t, r.step(editTo("a again", "patch-a"), fail("tests", true, "x"))); s.Cause != stall.PatternRepeatedFailure {
			t.Errorf("cause %q", s.Cause)
		}
	})
}

// A polling case (the same status command whose output changes each time)
// is not a loop; the same command with byte-identical output is.
func TestPollingIsNotALoop(t *testing.T) {
	p := only(func(p *stall.Policy) {
		p.RepeatedObservation, p.RepeatedError, p.IdleTurns, p.Alternation, p.RepairBudget = 3, 3, 3, 3, 0
	})
	r := newRun(t, p)
	for i := range 8 {
		if o := r.step(cmd("job status", "running, "+strconv.Itoa(i*10)+"% done")); action(o) != "none" {
			t.Fatalf("poll %d: %s (armed %v)", i+1, action(o), o.Checkpoint.Armed)
		}
	}
	r = newRun(t, p)
	r.step(cmd("job status", "running"))
	r.step(cmd("job status", "running"))
	if s := stopOf(t, r.step(cmd("job status", "running"))); s.Cause != stall.PatternRepeatedObservation || len(s.Evidence) != 3 {
		t.Errorf("stop %+v", s)
	}
}

// The same action ending in the same error repeatedly arms repeated_error,
// even when the error text changes each time.
func TestRepeatedErrorIgnoresText(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedError, p.RepeatedObservation, p.RepairBudget = 3, 3, 0 }))
	failing := func(i int) call {
		c := cmd("make build", "")
		// The text changes in a way that says something (a count), not
		// only in a volatile token, which observations ignore.
		c.errCode, c.errMsg = "exit_status", "exit status 2 on attempt "+strconv.Itoa(i)
		return c
	}
	r.step(failing(1))
	r.step(failing(2))
	o := r.step(failing(3))
	if s := stopOf(t, o); s.Cause != stall.PatternRepeatedError {
		t.Errorf("cause %q", s.Cause)
	}
	if slices.Contains(o.Checkpoint.Armed, stall.PatternRepeatedObservation) {
		t.Error("observations differ, yet repeated_observation armed")
	}
}

// Turns with no tool call arm idle_turns, and so do turns whose only call
// is the completion claim.
func TestIdleTurns(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.IdleTurns, p.RepairBudget = 3, 1 }))
	r.step()
	r.step(taskComplete(`{"status":"done"}`))
	rt := retryOf(t, r.step())
	if rt.Cause != stall.PatternIdleTurns || rt.Remaining != 0 || !strings.Contains(rt.Feedback, "3 turns") {
		t.Errorf("retry %+v", rt)
	}
	if s := stopOf(t, r.step()); s.Cause != stall.PatternIdleTurns {
		t.Errorf("cause %q", s.Cause)
	}
}

// A-B-A-B alternation with identical results arms alternation after the
// configured number of cycles; alternation whose results change does not.
func TestAlternation(t *testing.T) {
	p := only(func(p *stall.Policy) { p.Alternation, p.RepairBudget = 3, 0 })
	r := newRun(t, p)
	var got []string
	for i := range 6 {
		if i%2 == 0 {
			got = append(got, action(r.step(read("a.go", "package a"))))
		} else {
			got = append(got, action(r.step(read("b.go", "package b"))))
		}
	}
	if want := []string{"none", "none", "none", "none", "none", "stop"}; !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	r = newRun(t, p)
	for i := range 8 {
		out := "tick " + strconv.Itoa(i)
		c := read("a.go", out)
		if i%2 == 1 {
			c = cmd("status", out)
		}
		if o := r.step(c); action(o) != "none" {
			t.Fatalf("changing alternation stopped at turn %d", i+1)
		}
	}
}

// Tool-free turns never earn immunity: they do not break a repeat of the
// tool turns around them.
func TestToolFreeTurnsEarnNoImmunity(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedObservation, p.RepairBudget = 3, 0 }))
	r.step(cmd("status", "same"))
	r.step()
	r.step(cmd("status", "same"))
	r.step()
	if s := stopOf(t, r.step(cmd("status", "same"))); s.Cause != stall.PatternRepeatedObservation {
		t.Errorf("cause %q", s.Cause)
	}
}

// No-op turns (every call refused, failed or changing nothing) never earn
// immunity either: they count as idle, however their arguments vary.
func TestNoOpTurnsEarnNoImmunity(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.IdleTurns, p.RepairBudget = 3, 0 }))
	r.step(rejectedEdit("a"))
	r.step(noopEdit("b"))
	if s := stopOf(t, r.step(rejectedEdit("c"))); s.Cause != stall.PatternIdleTurns {
		t.Errorf("cause %q", s.Cause)
	}
	r = newRun(t, only(func(p *stall.Policy) { p.IdleTurns, p.RepairBudget = 3, 0 }))
	r.step()
	r.step(noopEdit("b"))
	stopOf(t, r.step())
}

// Every threshold is policy: 0 disables its pattern.
func TestThresholdZeroDisablesPattern(t *testing.T) {
	r := newRun(t, stall.Policy{Requirements: []stall.Requirement{{ID: "tests", Check: "tests"}}})
	for i := range 12 {
		var o events.StallObservation
		switch i % 3 {
		case 0:
			o = r.step(fail("tests", true, "x"))
		case 1:
			o = r.step()
		default:
			o = r.step(rejectedEdit("same"))
		}
		if action(o) != "none" || len(o.Checkpoint.Armed) > 0 {
			t.Fatalf("turn %d: action %s armed %v with every pattern off", i+1, action(o), o.Checkpoint.Armed)
		}
	}
}

// A stall stop lists every requirement not shown met: failing or stale
// checks, requirements only evidence could show, and a missing write.
func TestStopListsEveryUnmetRequirement(t *testing.T) {
	p := only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 2, 0 })
	p.Requirements = []stall.Requirement{
		{ID: "tests", Check: "tests"}, {ID: "lint", Check: "lint"}, {ID: "docs"}, {ID: stall.WriteRequirement, Write: true},
	}
	p.FixtureDigest = events.DigestOf([]byte("fixture"))
	r := newRun(t, p)
	r.step(edit("fix"), pass("lint"), fail("tests", true, "x"))
	s := stopOf(t, r.step(fail("tests", true, "x")))
	if want := []events.RequirementID{"tests", "docs"}; !slices.Equal(s.Unmet, want) {
		t.Errorf("unmet %v, want %v", s.Unmet, want)
	}
	// Changing the workspace back to the fixture undoes the write, and
	// makes the lint pass stale.
	r = newRun(t, p)
	r.step(edit("fix"), pass("lint"), editTo("revert", "fixture"), fail("tests", true, "x"))
	s = stopOf(t, r.step(fail("tests", true, "x")))
	if want := []events.RequirementID{"tests", "lint", "docs", stall.WriteRequirement}; !slices.Equal(s.Unmet, want) {
		t.Errorf("unmet %v, want %v", s.Unmet, want)
	}
}

// Retry carries feedback and the budget left; when the budget is spent the
// run stops incomplete, or escalates to the admitted target with evidence.
func TestRetryThenStopOrEscalate(t *testing.T) {
	for _, target := range []string{"", "human-review"} {
		r := newRun(t, only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget, p.EscalateTo = 2, 2, target }))
		r.step(fail("tests", true, "calc.go:3: want 2"))
		rt := retryOf(t, r.step(fail("tests", true, "calc.go:3: want 2")))
		if rt.Remaining != 1 || !strings.Contains(rt.Feedback, `"tests"`) || !strings.Contains(rt.Feedback, "want 2") {
			t.Errorf("first retry %+v", rt)
		}
		if rt := retryOf(t, r.step(fail("tests", true, "calc.go:3: want 2"))); rt.Remaining != 0 {
			t.Errorf("second retry %+v", rt)
		}
		o := r.step(fail("tests", true, "calc.go:3: want 2"))
		if target == "" {
			if s := stopOf(t, o); !slices.Equal(s.Unmet, []events.RequirementID{"tests"}) || len(s.Evidence) == 0 {
				t.Errorf("stop %+v", s)
			}
			continue
		}
		e, ok := o.Action.Variant().(events.StallEscalate)
		if !ok || e.Target != target || len(e.Evidence) != 4 || e.Cause != stall.PatternRepeatedFailure {
			t.Errorf("with an admitted target: action %s %+v", action(o), o.Action)
		}
	}
}

// Arming, opportunity, decision and delivered feedback are distinct: a
// retry committed after the next turn had already started has not reached
// the model, so the staller decides nothing more until it has.
func TestArmingDecisionAndDeliveryAreDistinct(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 2, 1 }))
	r.step(fail("tests", true, "x"))
	r.start()
	r.finish(events.Continue(), fail("tests", true, "x"))
	r.start() // turn 3 starts before turn 2's observation is committed
	o2 := r.observe(2)
	retryOf(t, o2)
	if !slices.Equal(o2.Checkpoint.Armed, []string{stall.PatternRepeatedFailure}) || o2.Checkpoint.FeedbackDelivered != 0 {
		t.Fatalf("turn 2 checkpoint %+v", o2.Checkpoint)
	}
	r.finish(events.Continue(), fail("tests", true, "x"))
	o3 := r.observe(3)
	if o3.Action != nil || !slices.Contains(o3.Checkpoint.Armed, stall.PatternRepeatedFailure) ||
		o3.Checkpoint.FeedbackDelivered != 0 || o3.Checkpoint.Opportunity != 0 {
		t.Fatalf("turn 3 (feedback undelivered): action %s checkpoint %+v; want armed, no decision", action(o3), o3.Checkpoint)
	}
	o4 := r.step(fail("tests", true, "x"))
	if o4.Checkpoint.FeedbackDelivered != 1 || o4.Checkpoint.Opportunity != 2 {
		t.Errorf("turn 4 checkpoint %+v: want the retry of turn 2 delivered, this turn its opportunity", o4.Checkpoint)
	}
	stopOf(t, o4)
}

// A new task generation (a steer) gets a fresh episode and repair budget.
func TestNewGenerationStartsFreshEpisode(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 2, 1 }))
	r.step(fail("tests", true, "x"))
	retryOf(t, r.step(fail("tests", true, "x")))
	r.steer("also handle negative numbers")
	o := r.step(fail("tests", true, "x"))
	if o.Checkpoint.Episode != 2 {
		t.Errorf("episode %d after a steer, want 2", o.Checkpoint.Episode)
	}
	retryOf(t, o)
}

// Observe depends only on the log: replaying every fact into a fresh state
// gives the observation that was committed for every turn.
func TestReplayGivesCommittedObservations(t *testing.T) {
	r := newRun(t, defaults())
	for i := range 8 {
		switch i % 4 {
		case 0:
			r.step(edit("e"+strconv.Itoa(i)), fail("tests", true, "v"+strconv.Itoa(i)))
		case 1:
			r.step()
		case 2:
			r.step(cmd("status", "same"))
		default:
			r.step(fail("tests", false, "p"))
		}
	}
	st := stall.New(r.policy)
	for _, f := range r.facts {
		st = stall.Fold(st, f)
	}
	for n, want := range r.obs {
		if got := stall.Observe(st, n); !reflect.DeepEqual(got, want) {
			t.Errorf("turn %d: replay %+v, committed %+v", n, got, want)
		}
	}
}

// The core imports only events and the standard library: no NATS, no I/O
// packages of this project.
func TestCoreImportsOnlyEventsAndStdlib(t *testing.T) {
	testutil.CheckPureCore(t, testutil.Module+"events")
}

// A repeat needs a turn to repeat: at repeated_observation 1 the first tool
// turn, which nothing came before, is not armed; the second, identical one
// is.
func TestRepeatedObservationNeedsAPreviousToolTurn(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedObservation, p.RepairBudget = 1, 0 }))
	if o := r.step(cmd("job status", "running")); len(o.Checkpoint.Armed) != 0 {
		t.Fatalf("first tool turn armed %v: it repeats nothing", o.Checkpoint.Armed)
	}
	if s := stopOf(t, r.step(cmd("job status", "running"))); s.Cause != stall.PatternRepeatedObservation {
		t.Errorf("identical second turn: cause %q", s.Cause)
	}
}

// As for observations, repeated_error 1 needs a previous tool turn that
// ended in the same errors.
func TestRepeatedErrorNeedsAPreviousToolTurn(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedError, p.RepairBudget = 1, 0 }))
	failing := func(i int) call {
		c := cmd("make build", "")
		c.errCode, c.errMsg = "exit_status", "exit status 2 on attempt "+strconv.Itoa(i)
		return c
	}
	if o := r.step(failing(1)); len(o.Checkpoint.Armed) != 0 {
		t.Fatalf("first failing tool turn armed %v: it repeats nothing", o.Checkpoint.Armed)
	}
	if s := stopOf(t, r.step(failing(2))); s.Cause != stall.PatternRepeatedError {
		t.Errorf("same error again: cause %q", s.Cause)
	}
}

// Alternation 1 arms when the third tool turn returns to the first (A-B-A):
// two turns alone show no alternation.
func TestAlternationOneCycleNeedsAReturn(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.Alternation, p.RepairBudget = 1, 0 }))
	var got []string
	for _, c := range []call{read("a.go", "package a"), read("b.go", "package b"), read("a.go", "package a")} {
		got = append(got, action(r.step(c)))
	}
	if want := []string{"none", "none", "stop"}; !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
}

// idle_turns counts idle turns, not repeats: at 1 a single turn that did no
// work arms it, and a first turn that did work does not.
func TestIdleTurnsOneCountsTheIdleTurnItself(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.IdleTurns, p.RepairBudget = 1, 0 }))
	if o := r.step(read("a.go", "package a")); len(o.Checkpoint.Armed) != 0 {
		t.Fatalf("a first read that answered something armed %v", o.Checkpoint.Armed)
	}
	if s := stopOf(t, r.step()); s.Cause != stall.PatternIdleTurns {
		t.Errorf("one idle turn at idle_turns 1: cause %q", s.Cause)
	}
}

// repeated_failure counts failures of a check on one workspace content, the
// first included: at 1 the first failure arms it (the calibration's
// `repeated_failure: 1` row is this setting), and a failure on new content
// starts the count again.
func TestRepeatedFailureOneArmsOnTheFirstFailure(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) { p.RepeatedFailure, p.RepairBudget = 1, 1 }))
	if rt := retryOf(t, r.step(fail("tests", true, "want 2"))); rt.Cause != stall.PatternRepeatedFailure {
		t.Errorf("first failure at repeated_failure 1: cause %q", rt.Cause)
	}
}

// An external agent's turns (turn.started with policy "agent") have no
// dispatches: its tools are its own, and what they did is not in the log.
// They arm no pattern, however many there are: every one of them used to
// count as idle, so an agent that worked through more than four model
// calls (codex, claude-code and the SDK agents take dozens) was stopped
// at its fifth, "stall: idle_turns: repair ended without the work done",
// with retries whose feedback it never receives. Found by an OpenAI-SDK
// agent on eight scripted turns that each ran a command.
func TestExternalAgentTurnsArmNothing(t *testing.T) {
	r := newRun(t, only(func(p *stall.Policy) {
		p.IdleTurns, p.RepeatedObservation, p.RepeatedError, p.Alternation = 3, 3, 3, 3
	}))
	for range 8 {
		r.turn++
		r.add(events.OwnerRunner, events.TurnStarted{Turn: r.turn, ContextDigest: events.DigestOf([]byte("ctx" + strconv.Itoa(int(r.turn)))),
			Policy: events.ContextPolicyAgent})
		args := `{"command":"ls"}`
		r.add(events.OwnerRunner, events.ModelReplied{Turn: r.turn, Provider: "scripted",
			Calls: []events.ToolCall{{ID: "call_0", Name: "bash", Args: args, ArgsDigest: events.DigestOf([]byte(args))}}})
		r.add(events.OwnerRunner, events.TurnCompleted{Evidence: events.RunEvidence{
			RunID: r.id, TaskGeneration: r.gen, Turn: r.turn, EvidencePosition: r.pos + 1, ActorIntent: events.Continue()}})
		if o := r.observe(r.turn); len(o.Checkpoint.Armed) > 0 || o.Action != nil {
			t.Fatalf("turn %d of an external agent: armed %v, action %+v; want nothing armed", r.turn, o.Checkpoint.Armed, o.Action)
		}
	}
}
