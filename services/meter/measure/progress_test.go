package measure

import (
	"testing"

	"github.com/factline/factline/events"
)

// The progress line counts as the report counts: after every fact of a
// suite, the Counter's tally equals the report's sums over treatments. The
// suite has what a naive count of grade.verdict facts gets wrong: excluded
// runs graded passed (a cancel, a harness error), pending, invalid and
// abstained grades, a disputed one, and runs still going.
func TestProgressCountsAsTheReportCounts(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2", "c3"}, []string{"A", "B"}, 2))
	l.attempt("c1", "A", 1, events.RunDone, u64(1), pass)
	l.attempt("c1", "A", 2, events.RunDone, u64(1), fail)
	l.attempt("c2", "A", 1, events.RunCancelled, u64(1), pass) // excluded, graded passed
	l.attempt("c2", "A", 2, events.RunErrored, nil, pass)      // harness error: excluded
	l.attempt("c3", "A", 1, events.RunDone, u64(1), vr(events.VerdictWaiting("lint")))
	l.attempt("c3", "A", 2, events.RunDone, u64(1), vr(events.VerdictNoAnswer("none")))
	l.attempt("c1", "B", 1, events.RunDone, u64(1), vr(events.VerdictAbstain("judge down")))
	l.attempt("c1", "B", 2, events.RunDone, u64(1), pass)
	l.regrade("c1", "B", 2, 2, events.VerdictFail(), events.GradeConflict{Revision: 2, ConflictsWith: 1, Instrument: "tests", Reason: "r"})
	l.attempt("c2", "B", 1, events.RunDone, u64(1), nil) // ended, awaiting its grade
	m := l.member("c2", "B", 2)
	l.add(m.Run, events.RunRequested{Case: "c2", CaseDigest: d("case:c2"), Treatment: "B", TreatmentDigest: d("treatment:B"), Trial: 2}, events.OwnerMeter)
	l.add(m.Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner) // running
	// A run nobody planned counts nowhere.
	l.add("stray", events.RunRequested{Case: "c9", CaseDigest: d("case:c9"), Treatment: "A", TreatmentDigest: d("treatment:A"), Trial: 1}, events.OwnerMeter)
	l.add("stray", events.RunEnded{Status: events.RunDone, Reason: "r"}, events.OwnerRunner)

	c := NewCounter("s")
	lg := NewLog("s")
	for i, f := range l.facts {
		c.Apply(f)
		lg.Apply(f)
		var want Tally
		for _, tr := range Build(lg).Treatments {
			want.Started += tr.Started
			want.Ended += tr.Ended
			want.Graded += tr.Graded
			want.Passed += tr.Passed
			want.Excluded += tr.Excluded
			want.Settled += tr.Planned - tr.Awaiting - tr.Disputed
		}
		if got := c.Tally(); got != want {
			t.Fatalf("after fact %d (%s of %s): progress %+v, report %+v", i+1, f.Kind(), f.Run, got, want)
		}
	}
	if got := c.Tally(); got.Graded != 2 || got.Passed != 1 || got.Excluded != 2 {
		t.Fatalf("final tally %+v, want 2 graded, 1 passed, 2 excluded", got)
	}
}
