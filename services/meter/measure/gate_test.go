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
