package measure

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// A run's context summaries are model calls of the agent: part of its
// usage (their tokens make the input/output split add up to what the run
// spent) and shown apart as context cost, an unknown usage counted apart.
func TestContextCostIsShownApart(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(175), pass)
	l.attempt("c2", "A", 1, events.RunDone, u64(100), pass)
	m1, m2 := l.member("c1", "A", 1), l.member("c2", "A", 1)
	l.add(m1.Run, events.ModelReplied{Turn: 1, Provider: "p", Usage: &events.Usage{InputTokens: 90, OutputTokens: 10, Cost: u64(1)}}, events.OwnerRunner)
	l.add(m1.Run, events.ContextSummarised{Turn: 2, From: 1, Through: 1, Summary: "s", RequestDigest: d("r"), Provider: "p",
		Usage: &events.Usage{InputTokens: 70, OutputTokens: 5, Cost: u64(1)}}, events.OwnerRunner)
	l.add(m2.Run, events.ContextSummarised{Turn: 2, From: 1, Through: 1, Summary: "s", RequestDigest: d("r"), Provider: "p"}, events.OwnerRunner)
	r := l.report()
	c := r.Treatments[0].Context
	if c == nil || c.Calls != 2 || c.Tokens == nil || *c.Tokens != 75 || c.TokensUnknown != 1 || *c.Cost != 1 || c.CostUnknown != 1 {
		t.Fatalf("context usage %+v", c)
	}
	for _, row := range r.Attempts {
		if row.Run == m1.Run && (row.InputTokens == nil || *row.InputTokens != 160 || *row.OutputTokens != 15) {
			t.Fatalf("the split of a summarised run: %+v", row)
		}
	}
	var txt bytes.Buffer
	if err := WriteTable(&txt, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(txt.String()), " "), "context summaries (part of the usage) 1 + 1 unknown cost units, 75 + 1 unknown tokens (2 calls)") {
		t.Fatalf("the table does not show the context cost:\n%s", txt.String())
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
	if row := recs[1]; row[col["context_calls"]] != "2" || row[col["context_tokens"]] != "75" || row[col["context_cost_units"]] != "1" || row[col["context_cost_unknown"]] != "1" {
		t.Fatalf("the CSV's context columns: %v", row)
	}
}

// A treatment that made no summary has no context usage: absent, not zero.
func TestNoSummaryNoContextCost(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1"}, []string{"A"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(100), pass)
	if c := l.report().Treatments[0].Context; c != nil {
		t.Fatalf("context usage %+v without a summary", c)
	}
}
