package measure

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/factline/factline/events"
)

type refSuite struct {
	Name   string `json:"name"`
	Scorer struct {
		ID  string  `json:"id"`
		Min float64 `json:"min"`
		Max float64 `json:"max"`
	} `json:"scorer"`
	Attempts []struct {
		Case      string   `json:"case"`
		Treatment string   `json:"treatment"`
		Trial     uint32   `json:"trial"`
		Outcome   string   `json:"outcome"`
		Raw       *float64 `json:"raw"`
	} `json:"attempts"`
}

type refTreatment struct {
	Values, Missing, Clusters int
	Mean, SE, Lo, Hi          float64
}

type refResult struct {
	Name   string       `json:"name"`
	A      refTreatment `json:"a"`
	B      refTreatment `json:"b"`
	Paired struct {
		Pairs, Clusters  int
		MeanA            float64 `json:"mean_a"`
		MeanB            float64 `json:"mean_b"`
		Estimate, Lo, Hi float64
		Wilcoxon         struct {
			N, Zeros int
			WPlus    float64 `json:"w_plus"`
			Z, P     float64
		}
	} `json:"paired"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// rowsOf makes the report's attempt rows of a reference suite: each
// attempt graded as the suite says, with its scorer's score as the grader
// records it.
func rowsOf(s refSuite) []AttemptRow {
	var rows []AttemptRow
	for _, a := range s.Attempts {
		r := AttemptRow{Case: a.Case, Treatment: a.Treatment, Trial: a.Trial, Outcome: Outcome(a.Outcome)}
		sc := events.Score{Scorer: s.Scorer.ID, Instrument: "i", Key: "score", Min: s.Scorer.Min, Max: s.Scorer.Max, Missing: "none"}
		if a.Raw != nil {
			v := (*a.Raw - s.Scorer.Min) / (s.Scorer.Max - s.Scorer.Min)
			sc.Raw, sc.Value, sc.Missing = a.Raw, &v, ""
		}
		r.Scores = []events.Score{sc}
		rows = append(rows, r)
	}
	return rows
}

func near(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil || math.Abs(*got-want) > 1e-9 {
		t.Errorf("%s = %v, the reference %v", what, deref(got), want)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// Must show: per scorer and treatment the mean, its CR1 clustered SE and
// its cluster bootstrap interval, and per comparison the paired difference
// with its interval and the Wilcoxon signed-rank test, equal the values of
// an independent reference (testdata/scores/reference.py, numpy and scipy)
// on three suites: unequal cluster sizes, ties at zero difference, and a
// rating on 1–5. Means and SEs to 1e-9; the bootstrap intervals bit for
// bit, since both draw the same SplitMix64 sequence under the same seed.
func TestScoreStatisticsEqualTheIndependentReference(t *testing.T) {
	var suites []refSuite
	var refs []refResult
	readJSON(t, "testdata/scores/suites.json", &suites)
	readJSON(t, "testdata/scores/reference.json", &refs)
	if len(suites) != 3 || len(refs) != 3 {
		t.Fatalf("%d suites, %d references", len(suites), len(refs))
	}
	for i, s := range suites {
		ref := refs[i]
		t.Run(s.Name, func(t *testing.T) {
			rows := rowsOf(s)
			for j, tr := range []string{"a", "b"} {
				want := []refTreatment{ref.A, ref.B}[j]
				got := scoreSummaries(tr, rows)
				if len(got) != 1 {
					t.Fatalf("%s: %d summaries", tr, len(got))
				}
				g := got[0]
				if g.Values != want.Values || g.Missing != want.Missing || g.Clusters != want.Clusters {
					t.Errorf("%s: %d values, %d missing, %d clusters; the reference %+v", tr, g.Values, g.Missing, g.Clusters, want)
				}
				near(t, tr+" mean", g.Mean, want.Mean)
				near(t, tr+" clustered SE", g.ClusteredSE, want.SE)
				if g.Interval == nil || g.Interval.Lo != want.Lo || g.Interval.Hi != want.Hi {
					t.Errorf("%s bootstrap interval %+v, the reference [%v, %v]", tr, g.Interval, want.Lo, want.Hi)
				}
			}
			cmp := compareScores(rows, "a", "b")
			if len(cmp) != 1 {
				t.Fatalf("%d score comparisons", len(cmp))
			}
			c, want := cmp[0], ref.Paired
			if c.Pairs != want.Pairs || c.Clusters != want.Clusters || c.Diff == nil || c.Wilcoxon == nil {
				t.Fatalf("%+v, the reference %+v", c, want)
			}
			near(t, "mean a", c.MeanA, want.MeanA)
			near(t, "mean b", c.MeanB, want.MeanB)
			near(t, "difference", &c.Diff.Estimate, want.Estimate)
			if c.Diff.Interval.Lo != want.Lo || c.Diff.Interval.Hi != want.Hi {
				t.Errorf("difference interval %+v, the reference [%v, %v]", c.Diff.Interval, want.Lo, want.Hi)
			}
			w := c.Wilcoxon
			if w.N != want.Wilcoxon.N || w.Zeros != want.Wilcoxon.Zeros {
				t.Errorf("wilcoxon %+v, the reference %+v", w, want.Wilcoxon)
			}
			near(t, "W+", &w.WPlus, want.Wilcoxon.WPlus)
			near(t, "z", &w.Z, want.Wilcoxon.Z)
			near(t, "p", &w.P, want.Wilcoxon.P)
		})
	}
}

// Rule: a scorer's mean over fewer than two cases withholds its SE and
// interval; attempts not graded passed or failed stay out, and graded
// ones without a value are counted apart.
func TestScoreMeanOverOneCaseWithholdsItsSEAndInterval(t *testing.T) {
	v := 0.5
	sc := []events.Score{{Scorer: "q", Instrument: "i", Min: 0, Max: 1, Raw: &v, Value: &v}}
	rows := []AttemptRow{
		{Case: "c", Treatment: "a", Trial: 1, Outcome: OutcomePassed, Scores: sc},
		{Case: "c", Treatment: "a", Trial: 2, Outcome: OutcomeFailed, Scores: sc},
		{Case: "d", Treatment: "a", Trial: 1, Outcome: OutcomePending, Scores: sc},
		{Case: "d", Treatment: "a", Trial: 2, Outcome: OutcomeFailed, Scores: []events.Score{{Scorer: "q", Instrument: "i", Max: 1, Missing: "x"}}},
	}
	g := scoreSummaries("a", rows)[0]
	if g.Mean == nil || *g.Mean != 0.5 || g.Values != 2 || g.Missing != 1 || g.Clusters != 1 || g.ClusteredSE != nil || g.Interval != nil {
		t.Fatalf("%+v", g)
	}
}

// The text report shows each scorer's mean with its interval per
// treatment, and its paired difference with the signed-rank test per
// comparison, within 100 columns.
func TestTextReportShowsScoresWithin100Columns(t *testing.T) {
	var suites []refSuite
	readJSON(t, "testdata/scores/suites.json", &suites)
	rows := rowsOf(suites[2])
	r := Report{Suite: "s", Name: "likert", Trials: 2, Method: Method{BootstrapResamples: 10000, BootstrapSeed: 20260601}, Attempts: rows,
		Treatments:  []TreatmentReport{{Treatment: "a", Scores: scoreSummaries("a", rows)}, {Treatment: "b", Scores: scoreSummaries("b", rows)}},
		Comparisons: []Comparison{{A: "a", B: "b", Label: "ablation", Scores: compareScores(rows, "a", "b")}}}
	var b strings.Builder
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"scores, each mapped onto [0, 1]", "quality", "1–5", "0.672", "[0.562, 0.797]",
		"score quality", "+0.100 [-0.100, +0.281]", "15 pairs, 8 cases; signed-rank p=0.572"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
}

// A grade's scores reach the report from the log: the scorer's mean over
// graded attempts, a pending one left out, an older grade without scores
// counted missing; the pass rates are what they are without scores.
func TestScoresFromGradesReachTheReport(t *testing.T) {
	build := func(scored bool) Report {
		l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"a", "b"}, 2))
		for i, c := range []string{"c1", "c2"} {
			for trial := uint32(1); trial <= 2; trial++ {
				for j, tr := range []string{"a", "b"} {
					raw := float64(1 + i + int(trial) + j) // on 1–5
					m := l.member(c, tr, trial)
					res := pass
					if raw < 3 {
						res = fail
					}
					if c == "c2" && tr == "b" && trial == 2 {
						res = vr(events.VerdictWaiting("tests"))
					}
					l.add(m.Run, events.RunRequested{Case: c, CaseDigest: d("case:" + c), Treatment: tr, TreatmentDigest: d("treatment:" + tr),
						Trial: trial, Identity: d(tr), Components: []events.Component{{Name: "model", Value: tr}}}, events.OwnerMeter)
					l.add(m.Run, events.CandidateSealed{SnapshotDigest: d(m.Run)}, events.OwnerRunner)
					l.add(m.Run, events.RunEnded{Status: events.RunDone, Reason: "done", Spent: events.Spent{Steps: 1, Millis: 1}}, events.OwnerRunner)
					v := events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: 1, Result: *res,
						Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}}}
					old := c == "c1" && tr == "a" && trial == 2 // a grade from before scores
					if scored && !old {
						value := (raw - 1) / 4
						v.Scores = []events.Score{{Scorer: "quality", Instrument: "tests", Key: "score", Min: 1, Max: 5, Raw: &raw, Value: &value}}
					}
					l.add(m.Run, events.GradeVerdict{Verdict: v}, events.OwnerGrader)
				}
			}
		}
		return l.report()
	}
	r, plain := build(true), build(false)
	a, b := r.Treatments[0], r.Treatments[1]
	// a: c1 t1 raw 2 (value .25), c1 t2 old, c2 t1 raw 3 (.5), c2 t2 raw 4 (.75).
	if len(a.Scores) != 1 || a.Scores[0].Values != 3 || a.Scores[0].Missing != 1 || *a.Scores[0].Mean != 0.5 || a.Scores[0].Interval == nil {
		t.Fatalf("a: %+v", a.Scores)
	}
	// b: c1 t1 raw 3, c1 t2 raw 4, c2 t1 raw 4; c2 t2 pending stays out.
	if b.Scores[0].Values != 3 || b.Scores[0].Missing != 0 || math.Abs(*b.Scores[0].Mean-(0.5+0.75+0.75)/3) > 1e-15 {
		t.Fatalf("b: %+v", b.Scores)
	}
	if len(r.Comparisons) != 1 || len(r.Comparisons[0].Scores) != 1 || r.Comparisons[0].Scores[0].Pairs != 2 {
		t.Fatalf("comparison: %+v", r.Comparisons)
	}
	for i := range r.Treatments {
		x, y := r.Treatments[i], plain.Treatments[i]
		if x.Passed != y.Passed || x.Failed != y.Failed || x.Pending != y.Pending || *x.PassRate != *y.PassRate || y.Scores != nil {
			t.Fatalf("scores changed the counts: %+v vs %+v", x, y)
		}
	}
	data, err := EncodeJSON(plain)
	if err != nil || strings.Contains(string(data), `"scores"`) {
		t.Fatalf("a report without scores names them: %v", err)
	}
}

// The CSV report has each scorer's columns, an undefined statistic an
// empty cell.
func TestCSVReportHasEachScorersColumns(t *testing.T) {
	one := 0.5
	r := Report{Suite: "s", Trials: 1, Treatments: []TreatmentReport{
		{Treatment: "a", Scores: []ScorerSummary{{Scorer: "quality", Mean: &one, Values: 1, Clusters: 1}}},
		{Treatment: "b"},
	}}
	var b strings.Builder
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	col := slices.Index(head, "score_quality_mean")
	if col < 0 || head[len(head)-1] != "score_quality_missing" {
		t.Fatalf("head %v", head)
	}
	if recs[1][col] != "0.5" || recs[1][col+1] != "" || recs[1][col+4] != "1" || recs[2][col] != "" {
		t.Fatalf("rows %v / %v", recs[1][col:], recs[2][col:])
	}
}

// By case, each case under each treatment shows each scorer's mean over
// its graded trials with a value, in the table, JSON and CSV.
func TestByCaseShowsEachScorersMean(t *testing.T) {
	var suites []refSuite
	readJSON(t, "testdata/scores/suites.json", &suites)
	rows := ByCase(Report{Attempts: rowsOf(suites[0])})
	// unequal: c1 under b has trials 1-3, trial 1 without a value.
	i := slices.IndexFunc(rows, func(r CaseRow) bool { return r.Case == "c1" && r.Treatment == "b" })
	if i < 0 || len(rows[i].Scores) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	s := rows[i].Scores[0]
	want := 0.0
	for _, a := range suites[0].Attempts {
		if a.Case == "c1" && a.Treatment == "b" && a.Raw != nil && (a.Outcome == "passed" || a.Outcome == "failed") {
			want += *a.Raw
		}
	}
	if s.Values != 2 || s.Missing != 1 || s.Mean == nil || math.Abs(*s.Mean-want/2) > 1e-12 {
		t.Fatalf("c1/b: %+v (mean %v), want 2 values averaging %v", s, deref(s.Mean), want/2)
	}
	var table, csvOut strings.Builder
	if err := WriteCaseTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "scores (mean on [0, 1], values)") || !strings.Contains(table.String(), "correctness ") {
		t.Fatalf("table:\n%s", table.String())
	}
	if err := WriteCaseCSV(&csvOut, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(csvOut.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if col := slices.Index(recs[0], "score_correctness_mean"); col < 0 || recs[i+1][col+1] != "2" || recs[i+1][col+2] != "1" {
		t.Fatalf("csv head %v, row %v", recs[0], recs[i+1])
	}
}

// Rule: a scorer's missing count is of the graded attempts whose case
// declares it. A suite mixing cases with and without a scorer reports the
// scorer's missing values among its own cases only, in the summary and by
// case: an attempt of a case that never had the scorer lacks no value.
func TestScoreMissingCountsOnlyTheCasesThatDeclareTheScorer(t *testing.T) {
	v := 0.5
	scored := []events.Score{{Scorer: "q", Instrument: "i", Key: "score", Min: 0, Max: 1, Raw: &v, Value: &v}}
	lacking := []events.Score{{Scorer: "q", Instrument: "i", Key: "score", Min: 0, Max: 1, Missing: "score = 7 is outside the scale [0, 1]"}}
	rows := []AttemptRow{
		{Case: "scored", Treatment: "a", Trial: 1, Outcome: OutcomePassed, Scores: scored},
		{Case: "scored", Treatment: "a", Trial: 2, Outcome: OutcomePassed, Scores: lacking},
		{Case: "scored", Treatment: "a", Trial: 3, Outcome: OutcomeFailed}, // a grade from before the scorer
		{Case: "plain", Treatment: "a", Trial: 1, Outcome: OutcomePassed},
		{Case: "plain", Treatment: "a", Trial: 2, Outcome: OutcomeFailed},
		{Case: "other", Treatment: "a", Trial: 1, Outcome: OutcomePassed},
	}
	g := scoreSummaries("a", rows)
	if len(g) != 1 || g[0].Values != 1 || g[0].Missing != 2 {
		t.Fatalf("summary %+v: want 1 value and 2 missing (the scored case's trials 2 and 3), not the plain cases' attempts", g)
	}
	by := ByCase(Report{Attempts: rows})
	for _, r := range by {
		if len(r.Scores) != 1 {
			t.Fatalf("%s: scores %+v", r.Case, r.Scores)
		}
		want := 0
		if r.Case == "scored" {
			want = 2
		}
		if r.Scores[0].Missing != want {
			t.Errorf("by case %s: %d missing, want %d", r.Case, r.Scores[0].Missing, want)
		}
	}
}
