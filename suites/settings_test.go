package suites

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
)

// Sampling and reasoning settings shape what a model does: two treatments
// that differ only in one are two agents, and the model component names it.
func TestReasoningEffortAndTopPArePartOfTheIdentity(t *testing.T) {
	dir := tree(t, suiteFiles(goodSuite))
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, base := s.Cases[0], s.Treatments[0]
	id, _, err := AgentIdentity(c, base)
	if err != nil {
		t.Fatal(err)
	}
	effort := *base
	effort.Model.ReasoningEffort = "high"
	topP := *base
	p := 0.5
	topP.Model.TopP = &p
	for name, tr := range map[string]*cases.Treatment{"reasoning_effort": &effort, "top_p": &topP} {
		other, comps, err := AgentIdentity(c, tr)
		if err != nil {
			t.Fatal(err)
		}
		if other == id {
			t.Errorf("%s changed, the identity did not", name)
		}
		for _, comp := range comps {
			if comp.Name == ComponentModel && !strings.Contains(comp.Value, name) {
				t.Errorf("model component %q does not name %s", comp.Value, name)
			}
		}
	}
}
