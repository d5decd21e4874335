package suites

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
)

// A treatment that runs an external agent is another agent than the
// runner's own loop under the same model, and says so in an agent
// component naming its command; a treatment without one keeps the
// identity it had, with no agent component.
func TestAnExternalAgentIsAComponentOfTheRequestedIdentity(t *testing.T) {
	dir := tree(t, suiteFiles(goodSuite))
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, base := s.Cases[0], s.Treatments[0]
	id, comps, err := AgentIdentity(c, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range comps {
		if comp.Name == ComponentAgent {
			t.Fatalf("the built-in loop has an agent component %q", comp.Value)
		}
	}
	ext := *base
	ext.Agent = &cases.Agent{Command: []string{"qwen", "--yolo", "{{.Instruction}}"}}
	got, comps, err := AgentIdentity(c, &ext)
	if err != nil {
		t.Fatal(err)
	}
	if got == id {
		t.Fatal("an external agent kept the built-in loop's identity")
	}
	var value string
	for _, comp := range comps {
		if comp.Name == ComponentAgent {
			value = comp.Value
		}
	}
	if !strings.Contains(value, `"command":["qwen","--yolo","{{.Instruction}}"]`) || !strings.Contains(value, `"wire":"openai-chat"`) {
		t.Fatalf("agent component %q does not name the command and wire", value)
	}
	other := ext
	other.Agent = &cases.Agent{Command: []string{"opencode", "run", "{{.Instruction}}"}}
	if o, _, _ := AgentIdentity(c, &other); o == got {
		t.Fatal("two agents' commands gave one identity")
	}
}

// A version printed by the agent is part of its component.
func TestAgentComponentCarriesTheVersion(t *testing.T) {
	a := &cases.Agent{Command: []string{"qwen"}}
	without, _ := AgentComponent(a, "")
	with, err := AgentComponent(a, "0.24.4")
	if err != nil || without == with || !strings.Contains(with, `"version":"0.24.4"`) {
		t.Fatalf("component %q (without %q, err %v)", with, without, err)
	}
}
