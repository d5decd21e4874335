package measure

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"testing"

	"github.com/factline/factline/events"
)

// A treatment whose usage is all unknown has no total: null in the JSON, an
// empty cell in the CSV, with the count of unknowns beside it; never 0.
func TestUnknownUsageIsNeverAZero(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"known", "unknown"}, 1))
	for _, c := range []string{"c1", "c2"} {
		l.attempt(c, "known", 1, events.RunDone, u64(100), pass)
		m := l.member(c, "unknown", 1)
		l.add(m.Run, events.RunRequested{Case: c, CaseDigest: d("case:" + c), Treatment: "unknown", TreatmentDigest: d("treatment:unknown"),
			Trial: 1, Identity: d("unknown"), Components: []events.Component{{Name: "model", Value: "u"}}}, events.OwnerMeter)
		l.add(m.Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
		l.add(m.Run, events.RunEnded{Status: events.RunDone, Reason: "r", Spent: events.Spent{Steps: 1, Millis: 10}}, events.OwnerRunner)
		l.add(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: 1,
			Result: events.VerdictNoAnswer("no candidate")}}, events.OwnerGrader)
	}
	r := l.report()

	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Treatments []struct {
			Usage map[string]any `json:"usage"`
		} `json:"treatments"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	k, u := back.Treatments[0].Usage, back.Treatments[1].Usage
	if k["tokens"] != 200.0 || k["cost"] != 4.0 {
		t.Fatalf("known usage in the JSON: %v", k)
	}
	if tok, ok := u["tokens"]; !ok || tok != nil || u["tokens_unknown"] != 2.0 {
		t.Fatalf("unknown tokens in the JSON: %v (want null with 2 unknown)", u)
	}
	if cost, ok := u["cost"]; !ok || cost != nil || u["cost_unknown"] != 2.0 {
		t.Fatalf("unknown cost in the JSON: %v (want null with 2 unknown)", u)
	}

	var out bytes.Buffer
	if err := WriteCSV(&out, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	row := recs[2]
	if row[col["tokens"]] != "" || row[col["cost"]] != "" || row[col["tokens_unknown"]] != "2" || row[col["cost_unknown"]] != "2" {
		t.Fatalf("unknown usage in the CSV: %v", row)
	}
	if recs[1][col["tokens"]] != "200" || recs[1][col["cost"]] != "4" {
		t.Fatalf("known usage in the CSV: %v", recs[1])
	}
}
