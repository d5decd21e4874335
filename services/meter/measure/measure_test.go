package measure

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/stats"
)

func d(s string) events.Digest { return events.DigestOf([]byte(s)) }

func submitted(cases, treatments []string, trials uint32) events.SuiteSubmitted {
	s := events.SuiteSubmitted{Name: "s", SpecDigest: d("spec"), Trials: trials, Split: "dev"}
	for _, c := range cases {
		s.Cases = append(s.Cases, events.Ref{ID: c, Digest: d("case:" + c)})
	}
	for _, t := range treatments {
		s.Treatments = append(s.Treatments, events.Ref{ID: t, Digest: d("treatment:" + t)})
	}
	return s
}

// suiteLog builds a suite's facts the way the services commit them.
type suiteLog struct {
	t     *testing.T
	sub   events.SuiteSubmitted
	facts []events.Fact
	pos   map[string]uint64
	comps map[string][]events.Component // by treatment
}

func newSuite(t *testing.T, sub events.SuiteSubmitted) *suiteLog {
	l := &suiteLog{t: t, sub: sub, pos: map[string]uint64{}, comps: map[string][]events.Component{}}
	l.add(events.SuiteScope, sub, events.OwnerSubmitter)
	return l
}

func (l *suiteLog) add(run string, b events.Body, owner events.Owner) {
	l.t.Helper()
	l.pos[run]++
	m := events.Meta{Suite: "s", Run: run, TaskGeneration: 1, Position: l.pos[run],
		Producer: events.Producer{Service: owner, Instance: "test"}, At: time.Unix(int64(len(l.facts)), 0)}
	if run == events.SuiteScope {
		m.TaskGeneration = 0
	}
	f, err := events.NewFact(m, b)
	if err != nil {
		l.t.Fatal(err)
	}
	l.facts = append(l.facts, f)
}

func (l *suiteLog) member(c, t string, trial uint32) Member {
	for _, m := range Roster(l.sub) {
		if m.Case == c && m.Treatment == t && m.Trial == trial {
			return m
		}
	}
	l.t.Fatalf("no member %s/%s/%d", c, t, trial)
	return Member{}
}

// attempt commits the facts of one attempt: requested, claimed, sealed,
// ended with status, and a verdict when result is not nil.
func (l *suiteLog) attempt(c, t string, trial uint32, status events.RunStatus, tokens *uint64, result *events.VerdictResult, ins ...events.InstrumentResult) {
	m := l.member(c, t, trial)
	comps := l.comps[t]
	if comps == nil {
		comps = []events.Component{{Name: "harness", Value: "0.1.0"}, {Name: "model", Value: t}}
	}
	l.add(m.Run, events.RunRequested{Case: c, CaseDigest: d("case:" + c), Treatment: t, TreatmentDigest: d("treatment:" + t),
		Trial: trial, Identity: d(t), Components: comps}, events.OwnerMeter)
	l.add(m.Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
	l.add(m.Run, events.CandidateSealed{SnapshotDigest: d(m.Run)}, events.OwnerRunner)
	cost := uint64(2)
	l.add(m.Run, events.RunEnded{Status: status, Reason: "because", Spent: events.Spent{Steps: 1, Tokens: tokens, Cost: &cost, Millis: 1000}}, events.OwnerRunner)
	if result != nil {
		if len(ins) == 0 {
			ins = []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}}
		}
		l.add(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: 1,
			Instruments: ins, Result: *result}}, events.OwnerGrader)
	}
}

func (l *suiteLog) report() Report {
	lg := NewLog("s")
	for _, f := range l.facts {
		lg.Apply(f)
	}
	return Build(lg)
}

func vr(v events.VerdictResult) *events.VerdictResult { return &v }
func u64(v uint64) *uint64                            { return &v }

var (
	pass = vr(events.VerdictOK())
	fail = vr(events.VerdictFail())
)

func TestRosterRunIDs(t *testing.T) {
	sub := submitted([]string{"fix-add", "a-b", "a", "_hidden"}, []string{"base", "c", "b-c"}, 2)
	r := Roster(sub)
	if len(r) != 4*3*2 {
		t.Fatalf("%d members", len(r))
	}
	if r[0].Run != "fix-add-base-t1" || r[0].Trial != 1 || r[len(r)-1].Trial != 2 {
		t.Fatalf("order or IDs: first %+v, last %+v", r[0], r[len(r)-1])
	}
	seen := map[string]bool{}
	for _, m := range r {
		if err := events.ValidateRunID(m.Run); err != nil {
			t.Errorf("%+v: %v", m, err)
		}
		if seen[m.Run] {
			t.Errorf("run ID %s twice", m.Run)
		}
		seen[m.Run] = true
	}
	// "a-b"+"c" and "a"+"b-c" would both be a-b-c-t1: both get a hash.
	for _, m := range r {
		if (m.Case == "a-b" && m.Treatment == "c") || (m.Case == "a" && m.Treatment == "b-c") {
			if !strings.HasPrefix(m.Run, "a-b-c-t") || len(m.Run) != len("a-b-c-t1")+9 {
				t.Errorf("collision not resolved: %+v", m)
			}
		}
	}
	long := submitted([]string{strings.Repeat("c", 100)}, []string{strings.Repeat("t", 100)}, 1)
	if m := Roster(long)[0]; len(m.Run) > 128 || events.ValidateRunID(m.Run) != nil {
		t.Errorf("long ID %q", m.Run)
	}
	// Deterministic.
	a, b := Roster(sub), Roster(sub)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("the roster is not deterministic")
		}
	}
}

// Must show: two treatments differing in two components are refused the
// ablation label.
func TestTwoComponentsAreRefusedTheAblationLabel(t *testing.T) {
	base := []events.Component{{Name: "context", Value: "full"}, {Name: "harness", Value: "0.1.0"}, {Name: "model", Value: "m1"}, {Name: "stall", Value: "on"}}
	one := []events.Component{{Name: "context", Value: "full"}, {Name: "harness", Value: "0.1.0"}, {Name: "model", Value: "m1"}, {Name: "stall", Value: "off"}}
	two := []events.Component{{Name: "context", Value: "window"}, {Name: "harness", Value: "0.1.0"}, {Name: "model", Value: "m1"}, {Name: "stall", Value: "off"}}
	for _, c := range []struct {
		name  string
		b     []events.Component
		label string
		diff  string
	}{
		{"one component", one, LabelAblation, "stall"},
		{"two components", two, LabelBundled, "context,stall"},
		{"none", base, LabelSameAgent, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A", "B"}, 1))
			l.comps["A"], l.comps["B"] = base, c.b
			for _, cs := range []string{"c1", "c2"} {
				l.attempt(cs, "A", 1, events.RunDone, u64(10), pass)
				l.attempt(cs, "B", 1, events.RunDone, u64(10), fail)
			}
			r := l.report()
			cmp := r.Comparisons[0]
			if cmp.Label != c.label || strings.Join(cmp.Differences, ",") != c.diff {
				t.Fatalf("label %q differences %v, want %q %q", cmp.Label, cmp.Differences, c.label, c.diff)
			}
			if c.label == LabelBundled && !strings.Contains(cmp.Note, "context, stall") {
				t.Fatalf("a bundled comparison names every difference: %q", cmp.Note)
			}
		})
	}
	// An attempt without a recorded identity cannot be labelled at all.
	l := newSuite(t, submitted([]string{"c1"}, []string{"A", "B"}, 1))
	l.comps["A"], l.comps["B"] = base, []events.Component{}
	l.attempt("c1", "A", 1, events.RunDone, nil, pass)
	m := l.member("c1", "B", 1)
	l.add(m.Run, events.RunRequested{Case: "c1", CaseDigest: d("case:c1"), Treatment: "B", TreatmentDigest: d("treatment:B"), Trial: 1}, events.OwnerMeter)
	if cmp := l.report().Comparisons[0]; cmp.Label != LabelUnknown {
		t.Fatalf("no identity: %q", cmp.Label)
	}
}

// Every column of the report, each its own count.
func TestReportColumns(t *testing.T) {
	sub := submitted([]string{"c1", "c2", "c3"}, []string{"A", "B"}, 2)
	l := newSuite(t, sub)
	l.attempt("c1", "A", 1, events.RunDone, u64(100), pass)
	l.attempt("c1", "A", 2, events.RunDone, u64(100), fail)
	l.attempt("c2", "A", 1, events.RunIncomplete, nil, vr(events.VerdictWaiting("lint")))     // terminally pending
	l.attempt("c2", "A", 2, events.RunDone, u64(50), vr(events.VerdictNoAnswer("no answer"))) // invalid
	l.attempt("c3", "A", 1, events.RunDone, u64(50), vr(events.VerdictAbstain("judge down"))) // abstained
	l.attempt("c3", "A", 2, events.RunCancelled, u64(7), nil)                                 // excluded, never graded
	l.attempt("c1", "B", 1, events.RunErrored, nil, pass)                                     // harness error: excluded
	l.attempt("c1", "B", 2, events.RunDone, u64(1), nil)                                      // ended, awaiting its grade
	mB := l.member("c2", "B", 1)
	l.add(mB.Run, events.RunRequested{Case: "c2", CaseDigest: d("case:c2"), Treatment: "B", TreatmentDigest: d("treatment:B"), Trial: 1}, events.OwnerMeter)
	l.add(mB.Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner) // started, running
	r := l.report()
	if r.Complete {
		t.Fatal("a suite with awaiting attempts is not complete")
	}
	a, b := r.Treatments[0], r.Treatments[1]
	want := TreatmentReport{Treatment: "A", Harness: HarnessBuiltIn, Planned: 6, Started: 6, Ended: 6, Graded: 2, Passed: 1, Failed: 1, Pending: 1,
		Invalid: 1, Abstained: 1, Excluded: 1}
	got := a
	got.PassRate, got.Wilson, got.ClusteredSE, got.PassAtK, got.Usage = nil, nil, nil, nil, Usage{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("A:\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(a.Usage, Usage{Tokens: u64(307), TokensKnown: 5, TokensUnknown: 1, Cost: u64(12), CostKnown: 6, WallMillis: 6000, WallKnown: 6,
		SplitUnknown: 6, Turns: 6}) {
		t.Fatalf("A usage %+v: an unknown token count must be counted apart, not as 0", a.Usage)
	}
	if *a.PassRate != 0.5 {
		t.Fatalf("pass rate %v", *a.PassRate)
	}
	if b.Planned != 6 || b.Started != 3 || b.Ended != 2 || b.Excluded != 1 || b.HarnessErrors != 1 || b.Awaiting != 5 || b.Graded != 0 || b.PassRate != nil || b.Wilson != nil {
		t.Fatalf("B: %+v", b)
	}
	if b.Usage.TokensUnknown != 1 || b.Usage.TokensKnown != 1 || *b.Usage.Tokens != 1 {
		t.Fatalf("B usage %+v", b.Usage)
	}
	// Every row says where it landed and why.
	for _, row := range r.Attempts {
		if row.Outcome == "" || (row.Outcome != OutcomePassed && row.Outcome != OutcomeFailed && row.Reason == "") {
			t.Errorf("row without an outcome or a reason: %+v", row)
		}
	}
}

// Must show (report half): a required instrument that cannot run leaves
// the attempt pending, and the report counts it as pending, never as
// failed.
func TestPendingIsCountedAsPendingNotFailed(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(1), pass)
	l.attempt("c2", "A", 1, events.RunDone, u64(1), vr(events.VerdictWaiting("lint")),
		events.InstrumentResult{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed},
		events.InstrumentResult{Instrument: "lint", Version: "1", Required: true, Outcome: events.InstrumentErrored, Detail: "exit 127"})
	r := l.report()
	a := r.Treatments[0]
	if a.Pending != 1 || a.Failed != 0 || a.Graded != 1 || *a.PassRate != 1 || !r.Complete {
		t.Fatalf("%+v (complete %v)", a, r.Complete)
	}
	rep := r.Reported(d("report"))
	if rep.Pending != 1 || rep.Failed != 0 || rep.Attempts != 2 {
		t.Fatalf("suite.reported %+v", rep)
	}
	if err := events.ValidateBody(rep); err != nil {
		t.Fatal(err)
	}
}

// A definitive grade that does not rest on an instrument the suite requires
// is pending in the report.
func TestSuiteRequiredInstrumentMissingIsPending(t *testing.T) {
	sub := submitted([]string{"c1"}, []string{"A"}, 1)
	sub.Required = []events.InstrumentID{"tests", "scope"}
	l := newSuite(t, sub)
	l.attempt("c1", "A", 1, events.RunDone, u64(1), pass)
	row := l.report().Attempts[0]
	if row.Outcome != OutcomePending || !strings.Contains(row.Reason, "scope") {
		t.Fatalf("%+v", row)
	}
}

// Statistics in the report are the stats package's, on the right inputs.
func TestReportStatistics(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2", "c3"}, []string{"A", "B"}, 3))
	outcomes := map[string][3]bool{"c1": {true, true, false}, "c2": {false, false, false}, "c3": {true, true, true}}
	for _, c := range []string{"c1", "c2", "c3"} {
		for i, p := range outcomes[c] {
			res := fail
			if p {
				res = pass
			}
			l.attempt(c, "A", uint32(i+1), events.RunDone, u64(1), res)
			l.attempt(c, "B", uint32(i+1), events.RunDone, u64(1), fail)
		}
	}
	r := l.report()
	a := r.Treatments[0]
	iv, _ := stats.Wilson(5, 9, stats.Z95)
	_, se, _ := stats.ClusteredSE([][]float64{{1, 1, 0}, {0, 0, 0}, {1, 1, 1}})
	if *a.PassRate != 5.0/9 || *a.Wilson != iv || *a.ClusteredSE != se {
		t.Fatalf("A: rate %v wilson %v se %v", *a.PassRate, *a.Wilson, *a.ClusteredSE)
	}
	p1, _ := stats.PassAtK(3, 2, 2)
	wantK2 := (p1 + 0 + 1) / 3
	near := func(x, y float64) bool { return x-y < 1e-12 && y-x < 1e-12 }
	if len(a.PassAtK) != 3 || !near(a.PassAtK[0].Value, 5.0/9) || !near(a.PassAtK[1].Value, wantK2) || !near(a.PassAtK[2].Value, 2.0/3) || a.PassAtK[2].Cases != 3 {
		t.Fatalf("pass@k %+v", a.PassAtK)
	}
	cmp := r.Comparisons[0]
	if cmp.Pairs != 9 || cmp.McNemar.OnlyA != 5 || cmp.McNemar.OnlyB != 0 {
		t.Fatalf("comparison %+v", cmp)
	}
	p, _ := stats.McNemarExact(5, 0)
	if cmp.McNemar.P != p || cmp.Difference.Estimate != 5.0/9 || cmp.Difference.Resamples != stats.DefaultResamples || cmp.Difference.Clusters != 3 {
		t.Fatalf("comparison stats %+v %+v", cmp.McNemar, cmp.Difference)
	}
}

// The report depends on the facts, not on how the runs interleaved.
func TestReportIndependentOfInterleaving(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A", "B"}, 2))
	for _, c := range []string{"c1", "c2"} {
		for trial := uint32(1); trial <= 2; trial++ {
			l.attempt(c, "A", trial, events.RunDone, u64(uint64(trial)), pass)
			l.attempt(c, "B", trial, events.RunBlocked, nil, fail)
		}
	}
	want, _ := EncodeJSON(l.report())
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		// Shuffle across runs, keeping each run's own order.
		byRun := map[string][]events.Fact{}
		var runs []string
		for _, f := range l.facts[1:] {
			if _, ok := byRun[f.Run]; !ok {
				runs = append(runs, f.Run)
			}
			byRun[f.Run] = append(byRun[f.Run], f)
		}
		lg := NewLog("s")
		lg.Apply(l.facts[0])
		for len(runs) > 0 {
			i := rng.IntN(len(runs))
			lg.Apply(byRun[runs[i]][0])
			if byRun[runs[i]] = byRun[runs[i]][1:]; len(byRun[runs[i]]) == 0 {
				runs = append(runs[:i], runs[i+1:]...)
			}
		}
		got, _ := EncodeJSON(Build(lg))
		if !bytes.Equal(got, want) {
			t.Fatal("the report changed with the interleaving of runs")
		}
	}
}

// Anyone can rebuild the report with the registered projection.
func TestSuitesProjection(t *testing.T) {
	p, err := projections.Lookup("suites")
	if err != nil {
		t.Fatal(err)
	}
	l := newSuite(t, submitted([]string{"c1"}, []string{"A"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(3), pass)
	in := p.Start()
	for _, f := range l.facts {
		in.Apply(f)
	}
	reports, ok := in.View().([]Report)
	if !ok || len(reports) != 1 || !reports[0].Complete || reports[0].Treatments[0].Passed != 1 {
		t.Fatalf("view %+v", in.View())
	}
	want, _ := EncodeJSON(l.report())
	got, _ := EncodeJSON(reports[0])
	if !bytes.Equal(got, want) {
		t.Fatal("the projection's report differs from Build's")
	}
}

func TestOutputs(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"base<1>", "B"}, 2))
	for _, c := range []string{"c1", "c2"} {
		for trial := uint32(1); trial <= 2; trial++ {
			l.attempt(c, "base<1>", trial, events.RunDone, u64(10), pass)
			l.attempt(c, "B", trial, events.RunDone, nil, vr(events.VerdictWaiting("lint")))
		}
	}
	r := l.report()

	var table bytes.Buffer
	if err := WriteWideTable(&table, r); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"planned", "started", "ended", "graded", "passed", "failed", "pending", "invalid", "abstained",
		"excluded", "harness errors", "pass rate", "95% Wilson", "clustered SE", "pass@2", "tokens", "cost", "wall", "unknown (4)",
		"McNemar", "complete"} {
		if !strings.Contains(table.String(), col) {
			t.Errorf("the table has no %q:\n%s", col, table.String())
		}
	}

	var out bytes.Buffer
	if err := WriteCSV(&out, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("csv: %v, %d records", err, len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	if recs[1][col["pass_rate"]] != "1" || recs[2][col["pass_rate"]] != "" || recs[2][col["pending"]] != "4" || recs[2][col["tokens_unknown"]] != "4" {
		t.Fatalf("csv rows %v", recs)
	}

	var svg bytes.Buffer
	if err := WriteSVG(&svg, r); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	rects, texts := 0, []string{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "rect" {
				rects++
			}
		case xml.CharData:
			texts = append(texts, string(e))
		}
	}
	all := strings.Join(texts, "|")
	if rects != 2 || !strings.Contains(all, "base<1>") || !strings.Contains(all, "no graded attempt") {
		t.Fatalf("svg: %d rects, texts %s", rects, all)
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Treatments[1].PassRate != nil || *back.Treatments[0].Usage.Tokens != 40 || back.Treatments[1].Usage.Tokens != nil {
		t.Fatalf("json: %v %+v", err, back.Treatments)
	}
}
