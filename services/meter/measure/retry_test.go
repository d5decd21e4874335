package measure

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// A retried attempt counts once, by its newest run, in the report and in
// the progress tally alike, and its earlier runs stay listed.
func TestARetryReplacesTheRunItRetriesOnceAndHidesNothing(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"a"}, 1))
	l.attempt("c1", "a", 1, events.RunErrored, u64(5), nil)
	l.attempt("c2", "a", 1, events.RunDone, u64(5), vr(events.VerdictOK()))
	first := l.member("c1", "a", 1).Run
	rs := Retries(l.log(), nil)
	if len(rs) != 1 || rs[0].Of != first || rs[0].Run != first+"-retry2" || rs[0].Request.RetryOf != first {
		t.Fatalf("retries %+v", rs)
	}
	req := rs[0].Request
	l.add(rs[0].Run, req, events.OwnerMeter)
	l.add(rs[0].Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
	l.add(rs[0].Run, events.CandidateSealed{SnapshotDigest: d(rs[0].Run)}, events.OwnerRunner)
	l.add(rs[0].Run, events.RunEnded{Status: events.RunDone, Reason: "ok", LastEvidence: []events.EvidenceRef{}}, events.OwnerRunner)
	l.add(rs[0].Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: rs[0].Run, SnapshotID: d(rs[0].Run), Revision: 1,
		Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
		Result:      events.VerdictOK()}}, events.OwnerGrader)

	r := l.report()
	tr := r.Treatments[0]
	if tr.Planned != 2 || tr.Passed != 2 || tr.HarnessErrors != 0 || tr.Retried != 1 || !r.Complete {
		t.Fatalf("treatment %+v, complete %v: want 2 planned, 2 passed, 1 retried", tr, r.Complete)
	}
	row := r.Attempts[0]
	if row.Run != first+"-retry2" || len(row.Retried) != 1 || row.Retried[0].Run != first || row.Retried[0].Status != events.RunErrored {
		t.Fatalf("row %+v", row)
	}
	c := NewCounter("s")
	reads := 0
	for i, f := range l.facts {
		if err := c.Apply(f, earlierIn(l.facts, i, &reads)); err != nil {
			t.Fatal(err)
		}
	}
	if tl := c.Tally(); tl.Ended != 2 || tl.Passed != 2 || tl.Settled != 2 {
		t.Fatalf("tally %+v: want the retry counted in place of the run it retries", tl)
	}
	if len(Retries(l.log(), nil)) != 0 {
		t.Fatal("a retry that passed is retried again")
	}
}

func TestARetryIDStaysARunToken(t *testing.T) {
	long := strings.Repeat("x", 126) + "t1"
	id := RetryRunID(long, 12)
	if len(id) > 128 || !strings.HasSuffix(id, "-retry12") || events.ValidateRunID(id) != nil || id == RetryRunID(long[:127]+"2", 12) {
		t.Fatalf("retry ID %q (%d bytes)", id, len(id))
	}
}
