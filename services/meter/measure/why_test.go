package measure

import (
	"testing"

	"github.com/factline/factline/events"
)

// Harness errors are grouped by their run.ended reason, other exclusions
// by the report's; each group counts its runs and names the first; runs
// that count are in none.
func TestWhysGroupsHarnessErrorsAndExclusionsByReason(t *testing.T) {
	r := Report{Attempts: []AttemptRow{
		{Run: "a-t1", Status: events.RunDone, Outcome: OutcomePassed, EndReason: "done"},
		{Run: "b-t1", Status: events.RunErrored, Outcome: OutcomeExcluded, EndReason: "model_error: HTTP 500\nafter 5 attempts", Reason: "ended errored (…)"},
		{Run: "c-t1", Status: events.RunCancelled, Outcome: OutcomeExcluded, EndReason: "suite_stopped", Reason: "not run: the suite stopped early"},
		{Run: "b-t2", Status: events.RunErrored, Outcome: OutcomeExcluded, EndReason: "model_error: HTTP 500 after 5 attempts"},
		{Run: "c-t2", Status: events.RunCancelled, Outcome: OutcomeExcluded, Reason: "not run: the suite stopped early"},
		{Run: "d-t1", Status: events.RunCancelled, Outcome: OutcomeExcluded, Reason: "ended cancelled (operator), not a valid outcome of this suite"},
		{Run: "e-t1", Status: events.RunErrored, Outcome: OutcomePassed, EndReason: "harness: disk full"},
	}}
	want := []Why{
		{WhyHarnessError, "model_error: HTTP 500 after 5 attempts", 2, "b-t1"},
		{WhyHarnessError, "harness: disk full", 1, "e-t1"},
		{WhyExcluded, "not run: the suite stopped early", 2, "c-t1"},
		{WhyExcluded, "ended cancelled (operator), not a valid outcome of this suite", 1, "d-t1"},
	}
	got := Whys(r)
	if len(got) != len(want) {
		t.Fatalf("whys %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("why %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if w := Whys(Report{Attempts: []AttemptRow{{Run: "a", Status: events.RunDone, Outcome: OutcomePassed}}}); len(w) != 0 {
		t.Fatalf("a clean report has reasons: %+v", w)
	}
}
