package measure

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// crossLog is a suite of three cases under treatment T, two trials each,
// every attempt graded as outcome says (by case), its agent's components
// comps.
func crossLog(t *testing.T, outcome map[string]*events.VerdictResult, comps []events.Component, edit func(*events.SuiteSubmitted)) *Log {
	t.Helper()
	sub := submitted([]string{"c1", "c2", "c3"}, []string{"T"}, 2)
	if edit != nil {
		edit(&sub)
	}
	l := newSuite(t, sub)
	l.comps["T"] = comps
	for _, c := range []string{"c1", "c2", "c3"} {
		for trial := uint32(1); trial <= 2; trial++ {
			l.attempt(c, "T", trial, events.RunDone, u64(10), outcome[c])
		}
	}
	lg := NewLog("s")
	for _, f := range l.facts {
		lg.Apply(f)
	}
	return lg
}

var agent = []events.Component{{Name: "harness", Value: "0.1.0"}, {Name: "model", Value: "m1"}}

func allPass() map[string]*events.VerdictResult {
	return map[string]*events.VerdictResult{"c1": pass, "c2": pass, "c3": pass}
}

// Attempts pair on case and trial: a case that passed in A and fails in B
// is regressed, and the overall change is B − A over the pairs.
func TestCompareSuitesPairsOnCaseAndTrial(t *testing.T) {
	b := allPass()
	b["c1"], b["c3"] = fail, pass
	c, err := CompareSuites(Side{"a", crossLog(t, allPass(), agent, nil)}, Side{"b", crossLog(t, b, agent, nil)}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Overall
	if o.Pairs != 6 || o.Change == nil || o.Change.Points > -33.3 || o.Change.Points < -33.4 {
		t.Fatalf("overall: %d pairs, change %+v; want 6 pairs, -33.3 points", o.Pairs, o.Change)
	}
	if o.Label != LabelSameAgent || o.McNemar == nil || o.McNemar.OnlyA != 2 || o.McNemar.OnlyB != 0 {
		t.Fatalf("overall: label %q, McNemar %+v; want the same agent, 2 pairs only A passed", o.Label, o.McNemar)
	}
	if o.Change.Low == nil || *o.Change.Low > o.Change.Points || *o.Change.High < o.Change.Points {
		t.Fatalf("the change's interval %v..%v does not hold its estimate %v", o.Change.Low, o.Change.High, o.Change.Points)
	}
	if !slices.Equal(c.Regressed, []string{"c1"}) || len(c.Improved) != 0 {
		t.Fatalf("regressed %v improved %v, want [c1] and none", c.Regressed, c.Improved)
	}
	if len(c.Cases) != 3 || c.Cases[0].Verdict != CaseRegressed || c.Cases[0].PassedA != 2 || c.Cases[0].PassedB != 0 {
		t.Fatalf("cases: %+v", c.Cases)
	}
}

// A case whose content differs between A and B is refused from the
// pairing, and listed; --allow-changed-cases pairs it, still listed.
func TestCompareSuitesRefusesAChangedCase(t *testing.T) {
	edited := func(s *events.SuiteSubmitted) { s.Cases[1].Digest = d("case:c2, edited") }
	a := crossLog(t, allPass(), agent, nil)
	bOut := allPass()
	bOut["c2"] = fail
	b := crossLog(t, bOut, agent, edited)
	c, err := CompareSuites(Side{"a", a}, Side{"b", b}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Changed) != 1 || c.Changed[0].Case != "c2" || c.Changed[0].Paired {
		t.Fatalf("changed: %+v, want c2 refused", c.Changed)
	}
	if c.Overall.Pairs != 4 || len(c.Regressed) != 0 {
		t.Fatalf("the changed case entered the pairing: %d pairs, regressed %v", c.Overall.Pairs, c.Regressed)
	}
	for _, cc := range c.Cases {
		if cc.Case == "c2" {
			t.Fatalf("a refused case has a row: %+v", cc)
		}
	}
	c, err = CompareSuites(Side{"a", a}, Side{"b", b}, CrossOptions{AllowChangedCases: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Changed) != 1 || !c.Changed[0].Paired || c.Overall.Pairs != 6 || !slices.Equal(c.Regressed, []string{"c2"}) {
		t.Fatalf("allowed: changed %+v, %d pairs, regressed %v", c.Changed, c.Overall.Pairs, c.Regressed)
	}
	var buf bytes.Buffer
	if err := WriteCompareText(&buf, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "changed case c2") || !strings.Contains(buf.String(), "regressed (case changed)") {
		t.Fatalf("the text does not list the changed case:\n%s", buf.String())
	}
}

// Every identity component that differs between A's and B's agents is
// named; an unknown one refuses the paired statistics.
func TestCompareSuitesNamesWhatDiffersAndRefusesUnknown(t *testing.T) {
	other := []events.Component{{Name: "harness", Value: "0.2.0"}, {Name: "model", Value: "m2"}}
	c, err := CompareSuites(Side{"a", crossLog(t, allPass(), agent, nil)}, Side{"b", crossLog(t, allPass(), other, nil)}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Overall.Label != LabelBundled || strings.Join(c.Overall.Differences, ",") != "harness,model" {
		t.Fatalf("label %q differences %v, want a bundled comparison of harness and model", c.Overall.Label, c.Overall.Differences)
	}
	c, err = CompareSuites(Side{"a", crossLog(t, allPass(), agent, nil)}, Side{"b", crossLog(t, allPass(), []events.Component{}, nil)}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Overall.Label != LabelUnknown || c.Overall.Change != nil || c.Overall.McNemar != nil || c.Overall.Withheld == "" {
		t.Fatalf("unknown identity: label %q change %+v McNemar %+v withheld %q; want the paired statistics refused",
			c.Overall.Label, c.Overall.Change, c.Overall.McNemar, c.Overall.Withheld)
	}
}

// Treatments pair by name; suites that share none and hold more than one
// each need the pairs named, and a named pair must exist.
func TestCompareSuitesTreatmentPairs(t *testing.T) {
	l := func(ts ...string) *Log {
		lg := NewLog("s")
		for _, f := range newSuite(t, submitted([]string{"c1"}, ts, 1)).facts {
			lg.Apply(f)
		}
		return lg
	}
	if _, err := CompareSuites(Side{"a", l("x", "y")}, Side{"b", l("z", "w")}, CrossOptions{}); !errors.Is(err, ErrNoPairing) {
		t.Fatalf("no shared treatment: %v, want ErrNoPairing", err)
	}
	if _, err := CompareSuites(Side{"a", l("x")}, Side{"b", l("z")}, CrossOptions{Treatments: []TreatmentPair{{"x", "q"}}}); !errors.Is(err, ErrUnknownTreatment) {
		t.Fatalf("unknown treatment: %v, want ErrUnknownTreatment", err)
	}
	c, err := CompareSuites(Side{"a", l("x")}, Side{"b", l("z")}, CrossOptions{})
	if err != nil || len(c.Treatments) != 1 || c.Treatments[0] != (TreatmentPair{"x", "z"}) {
		t.Fatalf("one treatment each: %v %v, want x paired with z", c.Treatments, err)
	}
}

// The machine formats carry the comparison: JSON decodes, CSV has one row
// per case, Markdown is a table.
func TestCompareFormats(t *testing.T) {
	b := allPass()
	b["c3"] = fail
	c, err := CompareSuites(Side{"a", crossLog(t, allPass(), agent, nil)}, Side{"b", crossLog(t, b, agent, nil)}, CrossOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var js, cs, md bytes.Buffer
	if err := WriteCompareJSON(&js, c); err != nil {
		t.Fatal(err)
	}
	var back SuiteComparison
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !slices.Equal(back.Regressed, []string{"c3"}) {
		t.Fatalf("JSON: %v, regressed %v", err, back.Regressed)
	}
	if err := WriteCompareCSV(&cs, c); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil || len(rows) != 4 || rows[3][0] != "c3" || rows[3][10] != CaseRegressed {
		t.Fatalf("CSV: %v %q", err, rows)
	}
	if err := WriteCompareMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| T | same agent") || !strings.Contains(md.String(), "**Regressed:** `c3`") {
		t.Fatalf("Markdown:\n%s", md.String())
	}
}

// When A and B pair no case — every case renamed, or edited since the
// baseline — the comparison and a --fail-if-worse gate say so, naming the
// cases, rather than blaming identities no case could record "yet" (a
// message that sends a CI job to wait, or to rerun, for nothing).
func TestCompareSuitesSaysWhenNoCaseIsPaired(t *testing.T) {
	a := crossLog(t, allPass(), agent, nil)
	// The same three cases under new IDs.
	l := newSuite(t, submitted([]string{"c1-v2", "c2-v2", "c3-v2"}, []string{"T"}, 2))
	l.comps["T"] = agent
	for _, c := range []string{"c1-v2", "c2-v2", "c3-v2"} {
		for trial := uint32(1); trial <= 2; trial++ {
			l.attempt(c, "T", trial, events.RunDone, u64(10), pass)
		}
	}
	renamed := NewLog("s")
	for _, f := range l.facts {
		renamed.Apply(f)
	}
	edited := crossLog(t, allPass(), agent, func(s *events.SuiteSubmitted) {
		for i := range s.Cases {
			s.Cases[i].Digest = d("case:" + s.Cases[i].ID + ", edited")
		}
	})
	for _, c := range []struct {
		name string
		b    *Log
		says []string
	}{
		{"renamed", renamed, []string{"A and B pair no case", "only in A: c1, c2, c3", "only in B: c1-v2, c2-v2, c3-v2"}},
		{"edited", edited, []string{"A and B pair no case", "changed since A: c1, c2, c3", "--allow-changed-cases"}},
	} {
		cmp, err := CompareSuites(Side{"a", a}, Side{"b", c.b}, CrossOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := CheckComparison(cmp, []Gate{gate(t, GateWorse, "5")})
		if len(f) != 1 {
			t.Fatalf("%s: --fail-if-worse 5 with no case paired: %+v, want one failure", c.name, f)
		}
		var buf bytes.Buffer
		if err := WriteCompareText(&buf, cmp); err != nil {
			t.Fatal(err)
		}
		for _, want := range c.says {
			if !strings.Contains(f[0].Detail, want) {
				t.Errorf("%s: the gate's failure %q lacks %q", c.name, f[0].Detail, want)
			}
			if !strings.Contains(buf.String(), want) {
				t.Errorf("%s: the comparison lacks %q:\n%s", c.name, want, buf.String())
			}
		}
		if strings.Contains(buf.String(), "yet") {
			t.Errorf("%s: the comparison says to wait for what will never come:\n%s", c.name, buf.String())
		}
	}
}
