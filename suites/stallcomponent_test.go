package suites

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/factline/factline/cases"
)

// The stall component is written as every other value is, with snake_case
// keys, and says its version (2): version 1 wrote Go's field names
// ("RepeatedFailure":2). Its thresholds are the effective ones.
func TestTheStallComponentIsSnakeCaseAtVersion2(t *testing.T) {
	s, err := Load(filepath.Join(tree(t, suiteFiles(goodSuite)), "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, tr := s.Cases[0], s.Treatments[0]
	_, comps, err := AgentIdentity(c, tr)
	if err != nil {
		t.Fatal(err)
	}
	var value string
	for _, comp := range comps {
		if comp.Name == ComponentStall {
			value = comp.Value
		}
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(value), &got); err != nil {
		t.Fatalf("the stall component %q is no JSON object: %v", value, err)
	}
	eff := cases.Apply(c, tr).Stall
	want := map[string]any{"version": float64(StallComponentVersion), "repeated_failure": float64(eff.RepeatedFailure),
		"repeated_observation": float64(eff.RepeatedObservation), "repeated_error": float64(eff.RepeatedError),
		"idle_turns": float64(eff.IdleTurns), "alternation": float64(eff.Alternation),
		"failing_verifications": float64(eff.FailingVerifications), "repair_budget": float64(eff.RepairBudget)}
	if eff.EscalateTo != "" {
		want["escalate_to"] = eff.EscalateTo
	}
	if StallComponentVersion != 2 || len(got) != len(want) {
		t.Fatalf("the stall component %s, want the keys of %v (version 2)", value, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the stall component's %s is %v, want %v (%s)", k, got[k], v, value)
		}
	}
}
