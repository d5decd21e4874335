package measure

import (
	"bytes"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
)

// notStarted commits the run.requested of an attempt and, when reason is
// not empty, its runner's ending of it without a claim (the suite drained
// or cancelled before it started).
func (l *suiteLog) notStarted(c, t string, trial uint32, reason string) {
	m := l.member(c, t, trial)
	l.add(m.Run, events.RunRequested{Case: c, CaseDigest: d("case:" + c), Treatment: t, TreatmentDigest: d("treatment:" + t),
		Trial: trial, Identity: d(t)}, events.OwnerMeter)
	if reason != "" {
		l.add(m.Run, events.RunEnded{Status: events.RunCancelled, Reason: reason}, events.OwnerRunner)
	}
}

// A drained suite completes with what ran: its attempts never requested,
// and those its runner never started, are excluded as not run, counted
// neither as failures nor in the pass rate, and the report says which and
// who drained it, when and why.
func TestADrainedSuiteIsCompleteWithWhatRanAndCountsNoAttemptNeverRun(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2", "c3", "c4"}, []string{"A"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(10), pass)
	l.attempt("c2", "A", 1, events.RunDone, u64(10), fail)
	l.notStarted("c3", "A", 1, "")
	l.add(events.SuiteScope, events.SuiteControlled{ID: "ctl-1", Action: events.SuiteDrain, From: "ops@h", Reason: "budget spent"}, events.OwnerSubmitter)
	if r := l.report(); r.Complete {
		t.Fatal("complete while a requested run has not ended")
	}
	l.add(l.member("c3", "A", 1).Run, events.RunEnded{Status: events.RunCancelled, Reason: events.ReasonSuiteDrained}, events.OwnerRunner)

	r := l.report()
	if !r.Complete || r.NotRun != 2 || r.ControlState != projections.SuiteDrained || len(r.Controlled) != 1 {
		t.Fatalf("complete %v, not run %d, state %q, controls %v", r.Complete, r.NotRun, r.ControlState, r.Controlled)
	}
	a := r.Treatments[0]
	if a.Graded != 2 || a.Passed != 1 || a.Failed != 1 || a.Excluded != 2 || a.PassRate == nil || *a.PassRate != 0.5 {
		t.Fatalf("treatment counts the attempts never run: %+v", a)
	}
	for _, row := range r.Attempts[2:] {
		if !row.NotRun || row.Outcome != OutcomeExcluded || !strings.Contains(row.Reason, "not run: the suite was drained") {
			t.Errorf("row %+v", row)
		}
	}
	c := l.counted()
	if !c.Complete() || c.Tally().Excluded != 2 || c.Tally().Graded != 2 {
		t.Fatalf("the meter's count disagrees with the report: complete %v, %+v", c.Complete(), c.Tally())
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	head := table.String()
	for _, want := range []string{"drained by ops@h", "budget spent", "2 attempts never ran"} {
		if !strings.Contains(head, want) {
			t.Errorf("the table does not say %q:\n%s", want, head)
		}
	}
}

// A cancelled suite's running attempt ends cancelled (excluded by the
// default valid outcomes, not as not run: it ran), and the attempts
// never started are not run.
func TestACancelledSuiteSaysWhichAttemptsNeverRan(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2", "c3"}, []string{"A"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(10), pass)
	l.add(events.SuiteScope, events.SuiteControlled{ID: "ctl-2", Action: events.SuiteCancel, From: "ops", Reason: "wrong model"}, events.OwnerSubmitter)
	l.attempt("c2", "A", 1, events.RunCancelled, u64(3), vr(events.VerdictNoAnswer("no candidate")))
	l.notStarted("c3", "A", 1, events.ReasonSuiteCancelled)
	r := l.report()
	if !r.Complete || r.NotRun != 1 || r.Attempts[1].NotRun || !r.Attempts[2].NotRun {
		t.Fatalf("complete %v, not run %d, rows %+v", r.Complete, r.NotRun, r.Attempts)
	}
	if a := r.Treatments[0]; a.Graded != 1 || a.Passed != 1 || a.Excluded != 2 {
		t.Fatalf("%+v", a)
	}
	if c := l.counted(); !c.Complete() {
		t.Fatalf("the meter's count is not complete: %+v", c.Tally())
	}
}

// A paused suite is not complete: its attempts never requested wait for
// the resume; and the meter requests none while it is paused.
func TestAPausedSuiteWaitsAndRequestsNothing(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(10), pass)
	l.add(events.SuiteScope, events.SuiteControlled{ID: "p", Action: events.SuitePause, From: "ops"}, events.OwnerSubmitter)
	if r := l.report(); r.Complete || r.NotRun != 0 {
		t.Fatalf("a paused suite: complete %v, not run %d", r.Complete, r.NotRun)
	}
	c := l.counted()
	if c.Complete() || c.Control().MayRequest() {
		t.Fatalf("paused: complete %v, may request %v", c.Complete(), c.Control().MayRequest())
	}
	l.add(events.SuiteScope, events.SuiteControlled{ID: "r", Action: events.SuiteResume, From: "ops"}, events.OwnerSubmitter)
	if c := l.counted(); !c.Control().MayRequest() {
		t.Fatal("a resumed suite may not request")
	}
}
