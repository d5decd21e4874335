package measure

import (
	"encoding/csv"
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

// What a run a retry replaced spent is spend too: the treatment's usage
// counts each attempt by its newest run, so the earlier runs' tokens,
// cost, wall time and turns are shown apart (retried_usage, the CSV's
// retried_* columns, a note under the table) and on each earlier run,
// never dropped. Before, retrying a harness error made the suite's bill
// smaller: the errored run's spend left every figure.
func TestTheSpendOfARetriedRunIsShownApart(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"a"}, 1))
	l.attempt("c1", "a", 1, events.RunErrored, u64(5), nil)
	l.attempt("c2", "a", 1, events.RunDone, u64(5), vr(events.VerdictOK()))
	rs := Retries(l.log(), nil)
	if len(rs) != 1 {
		t.Fatalf("retries %+v", rs)
	}
	cost := uint64(3)
	l.add(rs[0].Run, rs[0].Request, events.OwnerMeter)
	l.add(rs[0].Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
	l.add(rs[0].Run, events.CandidateSealed{SnapshotDigest: d(rs[0].Run)}, events.OwnerRunner)
	l.add(rs[0].Run, events.RunEnded{Status: events.RunDone, Reason: "ok", LastEvidence: []events.EvidenceRef{},
		Spent: events.Spent{Steps: 2, Tokens: u64(7), Cost: &cost, Millis: 500}}, events.OwnerRunner)
	l.add(rs[0].Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: rs[0].Run, SnapshotID: d(rs[0].Run), Revision: 1,
		Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
		Result:      events.VerdictOK()}}, events.OwnerGrader)

	r := l.report()
	tr := r.Treatments[0]
	if tr.Usage.Tokens == nil || *tr.Usage.Tokens != 12 || tr.Usage.Cost == nil || *tr.Usage.Cost != 5 {
		t.Fatalf("usage %+v: want the newest runs' 7 + 5 tokens and 3 + 2 cost units", tr.Usage)
	}
	ru := tr.RetriedUsage
	if ru == nil || ru.Runs != 1 || ru.Tokens == nil || *ru.Tokens != 5 || ru.Cost == nil || *ru.Cost != 2 || ru.WallMillis != 1000 || ru.Turns != 1 {
		t.Fatalf("retried usage %+v: want the errored run's 5 tokens, 2 cost units, 1000 ms and 1 turn", ru)
	}
	if e := r.Attempts[0].Retried; len(e) != 1 || e[0].Tokens == nil || *e[0].Tokens != 5 || e[0].Cost == nil || *e[0].Cost != 2 {
		t.Fatalf("earlier runs %+v: want the errored run's spend on it", e)
	}
	var table strings.Builder
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	// The note wraps at 100 columns: read it as words.
	if !strings.Contains(strings.Join(strings.Fields(table.String()), " "), "1 run replaced by a retry spent 5 tokens, 2 cost units apart") {
		t.Fatalf("the table does not say what the replaced run spent:\n%s", table.String())
	}
	var out strings.Builder
	if err := WriteCSV(&out, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for name, want := range map[string]string{"retried_runs": "1", "retried_tokens": "5", "retried_tokens_unknown": "0", "retried_cost_units": "2", "retried_cost_unknown": "0"} {
		if i, ok := col[name]; !ok || recs[1][i] != want {
			t.Errorf("CSV %s: %v, want %s", name, recs[1], want)
		}
	}
	var js strings.Builder
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(strings.NewReader(js.String()))
	if err != nil || back.Treatments[0].RetriedUsage == nil || *back.Treatments[0].RetriedUsage.Tokens != 5 {
		t.Fatalf("the JSON does not keep the retried usage: %v %+v", err, back.Treatments[0].RetriedUsage)
	}
}
