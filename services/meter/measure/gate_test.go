package measure

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// Each gate flag's value is read into its gate, or refused with a typed
// error naming the flag, the value and what is wrong.
func TestParseGate(t *testing.T) {
	for _, c := range []struct {
		kind   GateKind
		value  string
		scorer string
		want   float64
	}{
		{GateUnder, "0.8", "", 0.8},
		{GateUnder, "80%", "", 0.8},
		{GateUnder, "scorer=quality:3.5", "quality", 3.5},
		{GateWorse, "5", "", 5},
		{GateWorse, "scorer=quality:0.25", "quality", 0.25},
	} {
		g, err := ParseGate(c.kind, c.value)
		if err != nil || g.Scorer != c.scorer || g.Threshold != c.want {
			t.Errorf("--%s %s: %+v %v, want scorer %q threshold %v", c.kind, c.value, g, err, c.scorer, c.want)
		}
	}
	for _, c := range []struct {
		kind  GateKind
		value string
		says  string
	}{
		{GateUnder, "1.5", "between 0 and 1"},
		{GateUnder, "high", "want a pass rate"},
		{GateUnder, "scorer=quality", "scorer=NAME:VALUE"},
		{GateUnder, "scorer=:1", "scorer=NAME:VALUE"},
		{GateUnder, "scorer=q:NaN", "no number"},
		{GateWorse, "5%", "without %"},
		{GateWorse, "-1", "between 0 and 100"},
		{GateWorse, "scorer=q:-1", "not negative"},
	} {
		_, err := ParseGate(c.kind, c.value)
		var ge *GateError
		if !errors.As(err, &ge) || !errors.Is(err, ErrBadGate) || ge.Flag != string(c.kind) || ge.Value != c.value || !strings.Contains(err.Error(), c.says) {
			t.Errorf("--%s %s: %v, want a GateError saying %q", c.kind, c.value, err, c.says)
		}
	}
}

func gate(t *testing.T, kind GateKind, v string) Gate {
	t.Helper()
	g, err := ParseGate(kind, v)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// --fail-under holds every treatment's pass rate; it passes when each
// holds and names the treatment that does not.
func TestFailUnderHoldsEveryTreatment(t *testing.T) {
	r := crossReport(t)
	if f := CheckReport(r, []Gate{gate(t, GateUnder, "0.5")}); len(f) != 0 {
		t.Fatalf("a 66.7%% pass rate failed --fail-under 0.5: %+v", f)
	}
	f := CheckReport(r, []Gate{gate(t, GateUnder, "70%")})
	if len(f) != 1 || !strings.Contains(f[0].Detail, "treatment T: pass rate 66.7% (4 of 6) is under 70.0%") {
		t.Fatalf("--fail-under 70%%: %+v", f)
	}
	if f := CheckReport(r, []Gate{gate(t, GateUnder, "scorer=quality:1")}); len(f) != 1 || !strings.Contains(f[0].Detail, "no graded attempt has a value of scorer quality") {
		t.Fatalf("a scorer no grade names: %+v", f)
	}
}

func crossReport(t *testing.T) Report {
	o := allPass()
	o["c2"] = fail
	return Build(crossLog(t, o, agent, nil))
}

// --fail-if-worse fails when B's pass rate is more than the points under
// A's, holds within them, and fails when the comparison is withheld.
func TestFailIfWorse(t *testing.T) {
	b := allPass()
	b["c2"] = fail // 100% → 66.7%: 33.3 points worse
	c, err := CompareSuites(Side{"a", crossLog(t, allPass(), agent, nil)}, Side{"b", crossLog(t, b, agent, nil)}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := CheckComparison(c, []Gate{gate(t, GateWorse, "40")}); len(f) != 0 {
		t.Fatalf("33.3 points worse failed --fail-if-worse 40: %+v", f)
	}
	f := CheckComparison(c, []Gate{gate(t, GateWorse, "10"), gate(t, GateUnder, "0.9")})
	if len(f) != 2 || !strings.Contains(f[0].Detail, "33.3 points under A's") || !strings.Contains(f[1].Detail, "treatment T: pass rate 66.7%") {
		t.Fatalf("--fail-if-worse 10 --fail-under 0.9: %+v", f)
	}
	c, err = CompareSuites(Side{"a", crossLog(t, allPass(), agent, nil)}, Side{"b", crossLog(t, allPass(), []events.Component{}, nil)}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := CheckComparison(c, []Gate{gate(t, GateWorse, "100")}); len(f) != 1 || !strings.Contains(f[0].Detail, "withheld") {
		t.Fatalf("an unknown identity passed the gate: %+v", f)
	}
}

// A gate flag's value never panics the parser: it is read into a gate
// within its kind's range, or refused with a GateError.
func FuzzParseGate(f *testing.F) {
	f.Add(true, "0.8")
	f.Add(false, "5")
	f.Add(true, "scorer=quality:3.5")
	f.Fuzz(func(t *testing.T, under bool, value string) {
		kind := GateWorse
		if under {
			kind = GateUnder
		}
		g, err := ParseGate(kind, value)
		if err != nil {
			var ge *GateError
			if !errors.As(err, &ge) || ge.Value != value {
				t.Fatalf("%q: %v is no GateError of the value", value, err)
			}
			return
		}
		switch {
		case g.Scorer == "" && kind == GateUnder && (g.Threshold < 0 || g.Threshold > 1):
			t.Fatalf("%q: a pass rate of %v", value, g.Threshold)
		case g.Scorer == "" && kind == GateWorse && (g.Threshold < 0 || g.Threshold > 100):
			t.Fatalf("%q: %v points", value, g.Threshold)
		case g.Threshold != g.Threshold:
			t.Fatalf("%q: NaN", value)
		}
	})
}

// A scorer gate's VALUE is in the scorer's own units (docs/report.md#gates),
// while the report keeps each mean mapped onto [0, 1] by the scale: the
// gate maps back before it compares. Before it did, a latency gate of
// 100 ms passed a mean of 328 ms (0.328 ≤ 100) and a quality gate of 50 on
// a 0–100 scale failed a mean of 76 (0.76 < 50).
func TestScorerGatesReadTheScorersUnits(t *testing.T) {
	report := func(scorer string, lo, hi float64, lower bool, mapped float64) Report {
		return Report{Treatments: []TreatmentReport{{Treatment: "T", Scores: []ScorerSummary{{
			Scorer: scorer, Min: lo, Max: hi, LowerIsBetter: lower, Values: 4, Mean: &mapped}}}}}
	}
	for _, c := range []struct {
		name  string
		r     Report
		gate  string
		holds bool
		says  string
	}{
		{"quality 76 of 100 at 50", report("quality", 0, 100, false, 0.76), "scorer=quality:50", true, ""},
		{"quality 76 of 100 at 80", report("quality", 0, 100, false, 0.76), "scorer=quality:80", false, "scorer quality's mean 76 is under 80"},
		{"quality 76 of 100 at exactly 76", report("quality", 0, 100, false, 0.7599999999999999), "scorer=quality:76", true, ""},
		{"latency 328 ms at 400", report("latency", 0, 1000, true, 0.328), "scorer=latency:400", true, ""},
		{"latency 328 ms at 100", report("latency", 0, 1000, true, 0.328), "scorer=latency:100", false, "scorer latency's mean 328 is above 100 (lower is better)"},
		{"rating 4 of 1–5 at 3.5", report("rating", 1, 5, false, 0.75), "scorer=rating:3.5", true, ""},
		{"rating 4 of 1–5 at 4.5", report("rating", 1, 5, false, 0.75), "scorer=rating:4.5", false, "scorer rating's mean 4 is under 4.5"},
		// A name no scorer has (a typo): the failure names the scorers
		// there are, so the job's log shows the mistake, not a regression.
		{"a misspelt scorer", report("quality", 0, 100, false, 0.76), "scorer=qualty:50", false,
			"no graded attempt has a value of scorer qualty (its scorers: quality)"},
	} {
		f := CheckReport(c.r, []Gate{gate(t, GateUnder, c.gate)})
		switch {
		case c.holds && len(f) != 0:
			t.Errorf("%s: --fail-under %s failed: %+v", c.name, c.gate, f)
		case !c.holds && (len(f) != 1 || !strings.Contains(f[0].Detail, c.says)):
			t.Errorf("%s: --fail-under %s: %+v, want one failure saying %q", c.name, c.gate, f, c.says)
		}
	}
}

// --fail-if-worse scorer=NAME:VALUE allows a drop of VALUE in the scorer's
// units, not in its mapped [0, 1] values: a drop of 20 ms of latency on a
// 0–1000 ms scale is 0.02 mapped, which a gate of 0.05 ms must not let by.
func TestScorerWorseGateReadsTheScorersUnits(t *testing.T) {
	cmp := func(lo, hi float64, lower bool, a, b float64) SuiteComparison {
		var c SuiteComparison
		c.Treatments = []TreatmentPair{{A: "T", B: "T"}}
		c.A.Complete, c.B.Complete = true, true
		c.B.Treatments = []TreatmentReport{{Treatment: "T", Scores: []ScorerSummary{{Scorer: "s", Min: lo, Max: hi, LowerIsBetter: lower, Values: 4, Mean: &b}}}}
		c.Overall.Label = LabelSameAgent
		c.Overall.Scores = []ScoreDifference{{Scorer: "s", Pairs: 4, Clusters: 2, MeanA: &a, MeanB: &b}}
		return c
	}
	for _, c := range []struct {
		name  string
		c     SuiteComparison
		gate  string
		holds bool
		says  string
	}{
		{"latency 300 → 320 ms, 50 allowed", cmp(0, 1000, true, 0.3, 0.32), "scorer=s:50", true, ""},
		{"latency 300 → 320 ms, 5 allowed", cmp(0, 1000, true, 0.3, 0.32), "scorer=s:5", false, "worse by 20, more than 5"},
		{"quality 80 → 70 of 100, 5 allowed", cmp(0, 100, false, 0.8, 0.7), "scorer=s:5", false, "from 80 (A) to 70 (B)"},
		{"quality 80 → 70 of 100, 10 allowed", cmp(0, 100, false, 0.8, 0.7), "scorer=s:10", true, ""},
		{"rating 4 → 3.5 of 1–5, 0.25 allowed", cmp(1, 5, false, 0.75, 0.625), "scorer=s:0.25", false, "worse by 0.5, more than 0.25"},
		{"a misspelt scorer", cmp(0, 100, false, 0.8, 0.7), "scorer=x:5", false, "no pair has a value of scorer x on both sides (the scorers compared: s)"},
	} {
		f := CheckComparison(c.c, []Gate{gate(t, GateWorse, c.gate)})
		switch {
		case c.holds && len(f) != 0:
			t.Errorf("%s: --fail-if-worse %s failed: %+v", c.name, c.gate, f)
		case !c.holds && (len(f) != 1 || !strings.Contains(f[0].Detail, c.says)):
			t.Errorf("%s: --fail-if-worse %s: %+v, want one failure saying %q", c.name, c.gate, f, c.says)
		}
	}
}

// A change of exactly POINTS holds --fail-if-worse POINTS ("at most POINTS
// under A's"): 19 of 20 against 20 of 20 is 5 points worse, which holds a
// gate of 5. The points were 100 × (0.95 − 1) = −5.000000000000004, so the
// gate failed on a float's rounding.
func TestFailIfWorseHoldsAChangeOfExactlyItsPoints(t *testing.T) {
	cases := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"}
	side := func(failing string) *Log {
		l := newSuite(t, submitted(cases, []string{"T"}, 2))
		l.comps["T"] = agent
		for _, c := range cases {
			for trial := uint32(1); trial <= 2; trial++ {
				res := pass
				if c == failing && trial == 1 {
					res = fail
				}
				l.attempt(c, "T", trial, events.RunDone, u64(10), res)
			}
		}
		lg := NewLog("s")
		for _, f := range l.facts {
			lg.Apply(f)
		}
		return lg
	}
	c, err := CompareSuites(Side{"a", side("")}, Side{"b", side("c4")}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Overall.Change == nil || c.Overall.Change.Points != -5 {
		t.Fatalf("19 of 20 against 20 of 20: change %+v, want exactly -5 points", c.Overall.Change)
	}
	if f := CheckComparison(c, []Gate{gate(t, GateWorse, "5")}); len(f) != 0 {
		t.Fatalf("exactly 5 points worse failed --fail-if-worse 5: %+v", f)
	}
	if f := CheckComparison(c, []Gate{gate(t, GateWorse, "4.9")}); len(f) != 1 {
		t.Fatalf("5 points worse held --fail-if-worse 4.9: %+v", f)
	}
	if got := c.Cases[3].Points; got == nil || *got != -50 {
		t.Fatalf("case c4, 1 of 2 against 2 of 2: %v points, want -50", got)
	}
}

// --fail-if-worse reads A's figures as much as B's: a baseline that is
// not complete (an attempt awaiting its grade, or disputed) may still
// move, and a pass it has yet to count is a regression the gate cannot
// see. Such a gate does not hold, naming why; --fail-under reads only B
// and is decided as before.
func TestFailIfWorseDoesNotHoldOnABaselineNotComplete(t *testing.T) {
	a := allPass()
	a["c2"] = nil // graded by nobody yet: awaiting
	b := allPass()
	b["c2"] = fail
	c, err := CompareSuites(Side{"nightly@base.flx", crossLog(t, a, agent, nil)}, Side{"b", crossLog(t, b, agent, nil)}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.A.Complete || !c.B.Complete {
		t.Fatalf("A complete %v, B complete %v: want A awaiting c2, B complete", c.A.Complete, c.B.Complete)
	}
	f := CheckComparison(c, []Gate{gate(t, GateWorse, "100")})
	if len(f) != 1 || !strings.Contains(f[0].Detail, "suite A (nightly@base.flx) is not complete: 2 awaiting") {
		t.Fatalf("--fail-if-worse 100 against a baseline awaiting 2 grades: %+v, want it not to hold, naming A", f)
	}
	if f := CheckComparison(c, []Gate{gate(t, GateUnder, "0.5")}); len(f) != 0 {
		t.Fatalf("--fail-under 0.5 reads B alone (66.7%%): %+v", f)
	}
}
