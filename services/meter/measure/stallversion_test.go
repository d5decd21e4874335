package measure

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// The stall component as version 1 wrote it (Go's field names) and as
// version 2 does (snake_case, "version":2), for the same thresholds, and
// version 2 with another repair budget.
const (
	stallV1      = `{"RepeatedFailure":2,"RepeatedObservation":3,"RepeatedError":3,"IdleTurns":3,"Alternation":3,"FailingVerifications":6,"RepairBudget":2,"EscalateTo":""}`
	stallV2      = `{"version":2,"repeated_failure":2,"repeated_observation":3,"repeated_error":3,"idle_turns":3,"alternation":3,"failing_verifications":6,"repair_budget":2}`
	stallV2Other = `{"version":2,"repeated_failure":2,"repeated_observation":3,"repeated_error":3,"idle_turns":3,"alternation":3,"failing_verifications":6,"repair_budget":5}`
)

func withStall(v string) []events.Component {
	return []events.Component{{Name: "harness", Value: "0.1.0"}, {Name: "model", Value: "m1"}, {Name: "stall", Value: v}}
}

// Stored facts written before the stall component's version 2 compare
// with newer ones by what they say: the same thresholds in either form
// are the same stall policy, other thresholds differ.
func TestBothFormsOfTheStallComponentCompareByTheirThresholds(t *testing.T) {
	if d := DiffComponents(withStall(stallV1), withStall(stallV2)); len(d) != 0 {
		t.Errorf("the same thresholds in versions 1 and 2 differ in %v", d)
	}
	if d := DiffComponents(withStall(stallV1), withStall(stallV2Other)); strings.Join(d, ",") != "stall" {
		t.Errorf("other thresholds: differences %v, want stall", d)
	}
	withEscalation := strings.Replace(stallV1, `"EscalateTo":""`, `"EscalateTo":"review"`, 1)
	if d := DiffComponents(withStall(withEscalation), withStall(stallV2)); strings.Join(d, ",") != "stall" {
		t.Errorf("an escalation target in version 1 only: differences %v, want stall", d)
	}

	// A treatment whose trials were requested across the change (one in
	// each form) is one agent, and its comparison is labelled by what
	// really differs.
	l := newSuite(t, submitted([]string{"c1"}, []string{"A", "B"}, 2))
	l.comps["A"], l.comps["B"] = withStall(stallV1), withStall(stallV2Other)
	l.attempt("c1", "A", 1, events.RunDone, u64(10), pass)
	l.attempt("c1", "B", 1, events.RunDone, u64(10), fail)
	l.comps["A"], l.comps["B"] = withStall(stallV2), withStall(stallV2Other)
	l.attempt("c1", "A", 2, events.RunDone, u64(10), pass)
	l.attempt("c1", "B", 2, events.RunDone, u64(10), fail)
	cmp := l.report().Comparisons[0]
	if cmp.Label != LabelAblation || strings.Join(cmp.Differences, ",") != "stall" {
		t.Fatalf("label %q differences %v (%s), want an ablation of stall", cmp.Label, cmp.Differences, cmp.Note)
	}
}

// Whatever a stored component holds, its comparable form is made without
// a panic, and is a fixed point: comparing it again changes nothing. The
// two forms of the same thresholds agree.
func FuzzComparableValue(f *testing.F) {
	for _, v := range []string{stallV1, stallV2, stallV2Other, "on", "", "null", "[]", `{"version":1}`, `{"RepairBudget":"x"}`} {
		f.Add("stall", v)
	}
	f.Add("model", stallV1)
	f.Fuzz(func(t *testing.T, name, value string) {
		c := comparableValue(name, value)
		if twice := comparableValue(name, value); twice != c {
			t.Fatalf("not deterministic: %q -> %q and %q", value, c, twice)
		}
		if again := comparableValue(name, c); again != c {
			t.Fatalf("not a fixed point: %q -> %q -> %q", value, c, again)
		}
	})
}
