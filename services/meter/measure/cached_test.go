package measure

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// Calls the response cache answered are counted apart, per attempt, per
// treatment and per case: their number and their tokens, in the JSON, the
// CSV, the narrow table's notes, the wide table and the by-case table.
// A reply the model gave is not counted.
func TestCachedCallsAreReportedApart(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"fresh", "cached"}, 1))
	for _, c := range []string{"c1", "c2"} {
		for _, tr := range []string{"fresh", "cached"} {
			m := l.member(c, tr, 1)
			reply := events.ModelReplied{Turn: 1, Provider: "openai", Usage: &events.Usage{InputTokens: 100, OutputTokens: 20, Cost: u64(7)}}
			if tr == "cached" {
				reply.Usage.Cost = u64(0)
				reply.Cached = &events.CachedReply{Entry: d("entry:" + c), Cost: u64(7)}
			}
			l.add(m.Run, reply, events.OwnerRunner)
			l.attempt(c, tr, 1, events.RunDone, u64(120), pass)
		}
	}
	r := l.report()
	fresh, cached := r.Treatments[0].Usage, r.Treatments[1].Usage
	if fresh.CachedCalls != 0 || fresh.CachedTokens != 0 {
		t.Fatalf("model calls counted as cached: %+v", fresh)
	}
	if cached.CachedCalls != 2 || cached.CachedTokens != 240 {
		t.Fatalf("cached usage %+v, want 2 calls and 240 tokens", cached)
	}

	var out bytes.Buffer
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "cached: served from the response cache 2 calls, 240 tokens") {
		t.Fatalf("the table does not show the hits:\n%s", out.String())
	}
	out.Reset()
	if err := WriteWideTable(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 calls, 240 tokens") {
		t.Fatalf("the wide table does not show the hits:\n%s", out.String())
	}
	out.Reset()
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
	if recs[1][col["cached_calls"]] != "0" || recs[2][col["cached_calls"]] != "2" || recs[2][col["cached_tokens"]] != "240" {
		t.Fatalf("the CSV's cached columns: %v", recs)
	}

	rows := ByCase(r)
	for _, row := range rows {
		want := 0
		if row.Treatment == "cached" {
			want = 1
		}
		if row.CachedCalls != want {
			t.Errorf("%s × %s: %d cached calls, want %d", row.Case, row.Treatment, row.CachedCalls, want)
		}
	}
	out.Reset()
	if err := WriteCaseTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(out.String(), "\n"); !strings.HasSuffix(strings.TrimSpace(head), "cached") {
		t.Fatalf("the by-case table has no cached column:\n%s", out.String())
	}
	out.Reset()
	if err := WriteCaseTable(&out, ByCase(Report{Attempts: []AttemptRow{{Case: "c", Treatment: "t", Status: events.RunDone}}})); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "cached") {
		t.Fatalf("a suite without a cache got a cached column:\n%s", out.String())
	}
}
