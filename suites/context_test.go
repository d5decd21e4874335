package suites

import (
	"strings"
	"testing"
)

// A context ablation is a one-line treatment change: full, window and
// summarise differ from one another in the context component alone, and
// the summarise policy's value names its condenser.
func TestAContextAblationDiffersInTheContextAlone(t *testing.T) {
	lines := map[string]string{
		"full":                  "context: {mode: full}",
		"window":                "context: {mode: window, window_turns: 2}",
		"summarise":             "context: {mode: summarise, summarise: {trigger_turns: 4, keep_first: 1, keep_last: 2}}",
		"summarise other model": "context: {mode: summarise, summarise: {model: small, trigger_turns: 4, keep_first: 1, keep_last: 2}}",
	}
	ids := map[string]string{}
	values := map[string]string{}
	var first []string
	for name, line := range lines {
		s, err := scaffoldSuite(t, "id: other\nmodel: {provider: scripted, scripts: scripts}\n"+line+"\n", nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		id, comps, err := AgentIdentity(s.Cases[0], s.Treatments[1])
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = string(id)
		for _, c := range comps {
			if c.Name == ComponentContext {
				values[name] = c.Value
			}
		}
		for other, id := range ids {
			if other != name && id == ids[name] {
				t.Fatalf("%s and %s are one identity", name, other)
			}
		}
		first = append(first, name)
		_, base, err := AgentIdentity(s.Cases[0], s.Treatments[0])
		if err != nil {
			t.Fatal(err)
		}
		if name != "full" {
			if d := measureDiff(base, comps); d != ComponentContext {
				t.Fatalf("%s against the default: differ in %q, want only %s", name, d, ComponentContext)
			}
		}
	}
	if v := values["summarise"]; !strings.Contains(v, `"summarise"`) || !strings.Contains(v, `"keep_first":1`) || !strings.Contains(v, `"prompt"`) {
		t.Fatalf("the summarise policy's component %s does not name its condenser", v)
	}
	if len(first) != len(lines) {
		t.Fatal("not every policy was compared")
	}
}
