package measure

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/stats"
)

// call is the usage of one model call; nil is a reply without usage.
func call(in, out, cost uint64) *events.Usage {
	return &events.Usage{InputTokens: in, OutputTokens: out, Cost: &cost}
}

// ran commits an attempt that made one model call per usage (a nil usage
// is a reply without one), ended done after millis with the spend the
// runner would record, and was graded result.
func (l *suiteLog) ran(c, tr string, trial uint32, millis uint64, result *events.VerdictResult, usages ...*events.Usage) {
	l.t.Helper()
	m := l.member(c, tr, trial)
	l.add(m.Run, events.RunRequested{Case: c, CaseDigest: d("case:" + c), Treatment: tr, TreatmentDigest: d("treatment:" + tr),
		Trial: trial, Identity: d(tr), Components: []events.Component{{Name: "harness", Value: "0.1.0"}, {Name: "model", Value: tr}}}, events.OwnerMeter)
	l.add(m.Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
	var tokens, cost uint64
	tokensKnown, costKnown := true, true
	for i, u := range usages {
		turn := uint32(i + 1)
		l.add(m.Run, events.TurnStarted{Turn: turn, ContextDigest: d(m.Run + "ctx")}, events.OwnerRunner)
		l.add(m.Run, events.ModelReplied{Turn: turn, Provider: "scripted", Usage: u}, events.OwnerRunner)
		if u == nil {
			tokensKnown, costKnown = false, false
			continue
		}
		tokens += u.InputTokens + u.OutputTokens
		if u.Cost == nil {
			costKnown = false
		} else {
			cost += *u.Cost
		}
	}
	spent := events.Spent{Steps: uint32(len(usages)), Millis: millis}
	if tokensKnown {
		spent.Tokens = &tokens
	}
	if costKnown {
		spent.Cost = &cost
	}
	l.add(m.Run, events.CandidateSealed{SnapshotDigest: d(m.Run)}, events.OwnerRunner)
	l.add(m.Run, events.RunEnded{Status: events.RunDone, Reason: "done", Spent: spent}, events.OwnerRunner)
	l.add(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: 1,
		Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
		Result:      *result}}, events.OwnerGrader)
}

// Tokens split into input and output (and the provider's prompt-cached
// and reasoning parts where every call reported them), turns and wall
// time: every figure of the report says its unit, and a part nobody
// reported stays unknown.
func TestUsageSaysItsUnits(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 1))
	cached, reasoning := uint64(300), uint64(40)
	l.ran("c1", "A", 1, 1500, pass,
		&events.Usage{InputTokens: 800, OutputTokens: 200, Cost: u64(3), CachedInputTokens: &cached, ReasoningTokens: &reasoning},
		&events.Usage{InputTokens: 900, OutputTokens: 100, Cost: u64(2), CachedInputTokens: u64(0), ReasoningTokens: u64(10)})
	l.ran("c2", "A", 1, 2250, fail, call(1000, 50, 4), nil)
	r := l.report()

	a1, a2 := r.Attempts[0], r.Attempts[1]
	if a1.InputTokens == nil || *a1.InputTokens != 1700 || *a1.OutputTokens != 300 || *a1.Turns != 2 ||
		a1.CachedInputTokens == nil || *a1.CachedInputTokens != 300 || *a1.ReasoningTokens != 50 {
		t.Fatalf("attempt 1: %+v", a1)
	}
	if a2.InputTokens != nil || a2.OutputTokens != nil || a2.CachedInputTokens != nil || a2.Turns == nil || *a2.Turns != 2 {
		t.Fatalf("attempt 2 (a reply without usage): %+v", a2)
	}
	u := r.Treatments[0].Usage
	if u.InputTokens == nil || *u.InputTokens != 1700 || *u.OutputTokens != 300 || u.SplitKnown != 1 || u.SplitUnknown != 1 ||
		*u.CachedInputTokens != 300 || u.CachedInputKnown != 1 || *u.ReasoningTokens != 50 || u.ReasoningKnown != 1 || u.Turns != 4 {
		t.Fatalf("usage %+v", u)
	}
	if r.Units != (Units{Tokens: "tokens", Cost: "cost units", Wall: "ms", Turns: "model turns"}) {
		t.Fatalf("units %+v", r.Units)
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Units      map[string]string `json:"units"`
		Treatments []struct {
			Usage map[string]any `json:"usage"`
		} `json:"treatments"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Units["cost"] != "cost units" || back.Units["wall"] != "ms" {
		t.Errorf("the JSON names no units: %v", back.Units)
	}
	if ju := back.Treatments[0].Usage; ju["input_tokens"] != 1700.0 || ju["output_tokens"] != 300.0 || ju["split_unknown"] != 1.0 || ju["turns"] != 4.0 {
		t.Errorf("the JSON's usage: %v", ju)
	}

	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	for _, want := range []string{"input tokens", "output tokens", "cost (cost units)", "wall (s)", "turns",
		"1700+", "300+", "2000+", "5+", "3.8", "tokens unknown for 1, cost for 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	var wide bytes.Buffer
	if err := WriteWideTable(&wide, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"input tokens", "output tokens", "prompt-cached input", "reasoning", "cost (cost units)", "wall (s)",
		"1700 + 1 unknown", "300 + 1 unknown", "3.8"} {
		if !strings.Contains(wide.String(), want) {
			t.Errorf("the wide table lacks %q:\n%s", want, wide.String())
		}
	}

	var c bytes.Buffer
	if err := WriteCSV(&c, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	row := recs[1]
	for name, want := range map[string]string{"input_tokens": "1700", "output_tokens": "300", "split_unknown": "1", "cost_units": "5",
		"cached_input_tokens": "300", "reasoning_tokens": "50", "turns": "4", "wall_millis": "3750"} {
		if i, ok := col[name]; !ok || row[i] != want {
			t.Errorf("CSV column %s: %v, want %s (header %v)", name, ok, want, recs[0])
		}
	}
}

// usagePairs is a suite of two treatments on three cases × two trials
// where A makes fewer model calls than B and runs faster, with one reply
// of A's without usage.
func usagePairs(t *testing.T) Report {
	l := newSuite(t, submitted([]string{"c1", "c2", "c3"}, []string{"A", "B"}, 2))
	c := func() *events.Usage { return call(800, 200, 2) }
	for trial := uint32(1); trial <= 2; trial++ {
		l.ran("c1", "A", trial, 1000, pass, c())
		l.ran("c1", "B", trial, 1500, fail, c(), c())
		l.ran("c3", "A", trial, 1000, pass, c(), c())
		l.ran("c3", "B", trial, 1500, pass, c(), c(), c())
	}
	l.ran("c2", "A", 1, 1000, pass, c())
	l.ran("c2", "B", 1, 1500, pass, c())
	l.ran("c2", "A", 2, 1000, pass, nil)
	l.ran("c2", "B", 2, 1500, pass, c())
	return l.report()
}

// The comparison gives paired relative differences of tokens, cost,
// turns and wall time, not only of the pass rate: paired on case × trial,
// ΣA/ΣB − 1 with the cluster bootstrap's interval, a pair with an unknown
// side left out and counted.
func TestComparisonsPairUsage(t *testing.T) {
	r := usagePairs(t)
	if len(r.Comparisons) != 1 || r.Comparisons[0].Usage == nil {
		t.Fatalf("comparisons %+v", r.Comparisons)
	}
	u := r.Comparisons[0].Usage
	// Tokens: A spent 1000, 1000, 1000, ?, 2000, 2000 where B spent
	// 2000, 2000, 1000, 1000, 3000, 3000: five pairs, 7000 / 11000 − 1.
	for name, m := range map[string]*PairedUsage{"tokens": u.Tokens, "input": u.InputTokens, "output": u.OutputTokens, "cost": u.Cost} {
		if m == nil || m.Pairs != 5 || m.LeftOut != 1 || m.Relative == nil || !closeTo(m.Relative.Estimate, 7000.0/11000-1) {
			t.Fatalf("%s: %+v", name, m)
		}
	}
	if u.Tokens.Unit != "tokens" || u.Cost.Unit != "cost units" || u.Turns.Unit != "model turns" || u.WallMillis.Unit != "ms" {
		t.Errorf("units: %s, %s, %s, %s", u.Tokens.Unit, u.Cost.Unit, u.Turns.Unit, u.WallMillis.Unit)
	}
	if !closeTo(*u.Tokens.MeanA, 1400) || !closeTo(*u.Tokens.MeanB, 2200) || !closeTo(*u.Cost.MeanA, 2.8) {
		t.Errorf("means: tokens %v vs %v, cost %v", *u.Tokens.MeanA, *u.Tokens.MeanB, *u.Cost.MeanA)
	}
	// Turns and wall time are known for every ended attempt: six pairs.
	if m := u.Turns; m.Pairs != 6 || m.LeftOut != 0 || !closeTo(m.Relative.Estimate, 8.0/12-1) {
		t.Errorf("turns: %+v", m)
	}
	if m := u.WallMillis; m.Pairs != 6 || !closeTo(m.Relative.Estimate, 6000.0/9000-1) || !closeTo(*m.MeanB, 1500) {
		t.Errorf("wall: %+v", m)
	}
	// The interval is the paired cluster bootstrap's over the cases, with
	// the report's seed, so the report is the same on every run.
	want, err := stats.PairedRatio([][]stats.Pair{{{A: 1000, B: 2000}, {A: 1000, B: 2000}}, {{A: 1000, B: 1000}}, {{A: 2000, B: 3000}, {A: 2000, B: 3000}}},
		stats.DefaultResamples, stats.DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Tokens.Relative; got.Interval == nil || *got.Interval != *want.Interval || got.Clusters != 3 || got.Seed != stats.DefaultSeed {
		t.Errorf("tokens interval %+v %v, want %v", got, got.Interval, want.Interval)
	}
	if iv := u.Tokens.Relative.Interval; iv.Hi > 0 || iv.Lo >= iv.Hi {
		t.Errorf("A used fewer tokens on every case but one tie; the interval is [%v, %v]", iv.Lo, iv.Hi)
	}

	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	for i, line := range strings.Split(out, "\n") {
		if i >= 2 && len([]rune(line)) > 100 { // the heading's lines hold a digest
			t.Errorf("line %d is %d columns: %q", i, len([]rune(line)), line)
		}
	}
	for _, want := range []string{
		"pass rate", "+33.3 pts", "6 pairs graded; 100.0% vs 66.7%; McNemar 2/0",
		"tokens", "-36.4% [", "5 pairs, 1 unknown;", "1400 vs 2200 tokens per attempt",
		"cost", "2.8 vs 4.4 cost units per attempt",
		"turns", "-33.3% [", "6 pairs", "1.3 vs 2.0 model turns per attempt",
		"wall time", "1.00 vs 1.50 s per attempt",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, out)
		}
	}
}

// Pairs of agents nobody can name measure nothing: the usage differences
// are withheld with the rest, and pairs from one case get no interval.
func TestUsageDifferencesWithheldAsThePassRates(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1"}, []string{"A", "B"}, 2))
	for trial := uint32(1); trial <= 2; trial++ {
		l.ran("c1", "A", trial, 1000, pass, call(10, 10, 1))
		l.ran("c1", "B", trial, 2000, pass, call(20, 20, 2))
	}
	r := l.report()
	u := r.Comparisons[0].Usage
	if u == nil || u.Tokens.Pairs != 2 || !closeTo(u.Tokens.Relative.Estimate, -0.5) || u.Tokens.Relative.Interval != nil ||
		!strings.Contains(u.Tokens.Withheld, "1 case") {
		t.Fatalf("one case: %+v", u.Tokens)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "-50.0% (no interval: the pairs come from 1 case)") {
		t.Errorf("the table:\n%s", table.String())
	}

	for i := range l.facts {
		if rr, ok := l.facts[i].Body.(events.RunRequested); ok && rr.Treatment == "B" {
			rr.Components = nil
			l.facts[i].Body = rr
		}
	}
	if c := l.report().Comparisons[0]; c.Usage != nil || !strings.Contains(c.Withheld, "usage") {
		t.Fatalf("identity unknown: usage %+v, withheld %q", c.Usage, c.Withheld)
	}
}

// A free model's cost is 0 on both sides: no relative difference, said
// so, and the means still shown.
func TestZeroTotalsHaveNoRelativeDifference(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A", "B"}, 1))
	for _, c := range []string{"c1", "c2"} {
		l.ran(c, "A", 1, 1000, pass, call(10, 10, 0))
		l.ran(c, "B", 1, 1000, pass, call(10, 10, 0))
	}
	m := l.report().Comparisons[0].Usage.Cost
	if m.Pairs != 2 || m.Relative != nil || !strings.Contains(m.Withheld, "0") || *m.MeanA != 0 {
		t.Fatalf("free cost: %+v", m)
	}
}

// The chart labels each bar with what it counts, in words.
func TestSVGLabelsSayPassedOfGraded(t *testing.T) {
	r := usagePairs(t)
	var b bytes.Buffer
	if err := WriteSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6 passed of 6 graded", "4 passed of 6 graded"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the chart lacks %q:\n%s", want, b.String())
		}
	}
}

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
