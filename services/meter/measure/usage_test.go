package measure

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
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
	if row[col["tokens"]] != "" || row[col["cost_units"]] != "" || row[col["tokens_unknown"]] != "2" || row[col["cost_unknown"]] != "2" {
		t.Fatalf("unknown usage in the CSV: %v", row)
	}
	if recs[1][col["tokens"]] != "200" || recs[1][col["cost_units"]] != "4" {
		t.Fatalf("known usage in the CSV: %v", recs[1])
	}
}

// The evaluators' model calls (the grader's judge, the decider's reviewer)
// are reported apart from the agents' usage, unknown usage counted apart.
func TestEvaluatorCostIsApartFromTheAgents(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(100), pass)
	l.attempt("c2", "A", 1, events.RunDone, u64(100), pass)
	m1, m2 := l.member("c1", "A", 1), l.member("c2", "A", 1)
	l.add(m1.Run, events.GradeInstrument{SnapshotDigest: d(m1.Run), Result: events.InstrumentResult{Instrument: "review", Version: "1", Outcome: events.InstrumentPassed},
		Judge: &events.JudgeCall{Model: "openai/judge", Millis: 900, Usage: &events.Usage{InputTokens: 1000, OutputTokens: 50, Cost: u64(30)}}}, events.OwnerGrader)
	l.add(m2.Run, events.GradeInstrument{SnapshotDigest: d(m2.Run), Result: events.InstrumentResult{Instrument: "review", Version: "1", Outcome: events.InstrumentAbstained},
		Judge: &events.JudgeCall{Model: "openai/judge", Millis: 100}}, events.OwnerGrader)
	l.add(m2.Run, events.StopDecided{Decision: events.StopDecision{DecisionID: "x", Turn: 1, TaskGeneration: 1,
		Result: events.Finish(events.StopFinish{Status: events.FinishDone, Reason: "r"})},
		Judge: &events.JudgeCall{Model: "openai/reviewer", Millis: 50, Usage: &events.Usage{InputTokens: 10, OutputTokens: 5}}}, events.OwnerDecider)
	r := l.report()
	tr := r.Treatments[0]
	if tr.Usage.Cost == nil || *tr.Usage.Cost != 4 || *tr.Usage.Tokens != 200 {
		t.Fatalf("the agents' usage took in the evaluators': %+v", tr.Usage)
	}
	e := tr.Evaluator
	if e.Calls != 3 || e.Tokens == nil || *e.Tokens != 1065 || e.TokensUnknown != 1 || e.Cost == nil || *e.Cost != 30 || e.CostUnknown != 2 || e.Millis != 1050 {
		t.Fatalf("evaluator usage %+v", e)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if words := strings.Join(strings.Fields(table.String()), " "); !strings.Contains(words, "evaluator cost in cost units 30 + 2 unknown (3 calls)") {
		t.Fatalf("the table does not show the evaluator cost:\n%s", table.String())
	}
}

// The evaluators' and the context summaries' usage keep their JSON keys
// and their order (docs/report.md), however their Go types are made.
func TestEvaluatorAndContextUsageKeepTheirJSONKeys(t *testing.T) {
	var e EvaluatorUsage
	e.Calls, e.Tokens, e.TokensUnknown, e.Cost, e.CostUnknown, e.Millis = 3, u64(1065), 1, u64(30), 2, 1050
	var c ContextUsage
	c.Calls, c.Tokens, c.TokensUnknown, c.Cost, c.CostUnknown = 2, nil, 2, u64(4), 1
	for _, tc := range []struct {
		v    any
		want string
	}{
		{e, `{"calls":3,"tokens":1065,"tokens_unknown":1,"cost":30,"cost_unknown":2,"millis":1050}`},
		{c, `{"calls":2,"tokens":null,"tokens_unknown":2,"cost":4,"cost_unknown":1}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%T as JSON:\n got %s\nwant %s", tc.v, got, tc.want)
		}
	}
}
