package measure

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

func TestByCaseCountsEachCaseUnderEachTreatment(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"a"}, 3))
	l.attempt("c1", "a", 1, events.RunDone, u64(10), vr(events.VerdictOK()))
	l.attempt("c1", "a", 2, events.RunDone, nil, vr(events.VerdictFail()))
	l.attempt("c1", "a", 3, events.RunDone, u64(5), vr(events.VerdictOK()))
	rows := ByCase(l.report())
	if len(rows) != 2 || rows[0].Case != "c1" || rows[1].Case != "c2" {
		t.Fatalf("rows %+v", rows)
	}
	c1 := rows[0]
	if c1.Trials != 3 || c1.Passed != 2 || c1.Failed != 1 || *c1.Tokens != 15 || c1.TokensUnknown != 1 {
		t.Fatalf("c1 %+v", c1)
	}
	if len(c1.PassAtK) != 2 || math.Abs(c1.PassAtK[0].Value-2.0/3) > 1e-12 || c1.PassAtK[1].K != 3 || c1.PassAtK[1].Value != 1 {
		t.Fatalf("pass@k %+v, want pass@1 2/3 and pass@3 1", c1.PassAtK)
	}
	if c2 := rows[1]; c2.Trials != 3 || c2.Other != 3 || c2.PassRate != nil || c2.Tokens != nil {
		t.Fatalf("c2 (nothing ran) %+v", c2)
	}
}

// By case, too, the tokens split into input and output, turns and wall
// time are kept, and the cost column names its unit.
func TestByCaseSaysItsUnits(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1"}, []string{"a"}, 2))
	l.ran("c1", "a", 1, 1200, pass, call(100, 20, 1), call(200, 30, 2))
	l.ran("c1", "a", 2, 800, fail, nil)
	rows := ByCase(l.report())
	r := rows[0]
	if r.InputTokens == nil || *r.InputTokens != 300 || *r.OutputTokens != 50 || r.SplitUnknown != 1 || r.Turns != 3 || r.WallMillis != 2000 {
		t.Fatalf("row %+v", r)
	}
	var b bytes.Buffer
	if err := WriteCaseTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "cost (cost units)") || !strings.Contains(b.String(), "100.0% (n=2)") {
		t.Fatalf("the table:\n%s", b.String())
	}
	b.Reset()
	if err := WriteCaseCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for name, want := range map[string]string{"input_tokens": "300", "output_tokens": "50", "cost_units": "3", "turns": "3", "wall_millis": "2000"} {
		if i, ok := col[name]; !ok || recs[1][i] != want {
			t.Errorf("CSV %s: %v, want %s", name, recs[1], want)
		}
	}
}
