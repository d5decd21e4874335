package measure

import (
	"math"
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
