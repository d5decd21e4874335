package suites

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

// scaffoldSuite is goodSuite's files with treatments of its own: base and
// one more, whose file is given.
func scaffoldSuite(t *testing.T, other string, extra map[string]string) (*Suite, error) {
	t.Helper()
	files := suiteFiles(strings.Replace(goodSuite, "treatments/nostall.yaml", "treatments/other.yaml", 1))
	files["treatments/other.yaml"] = other
	for k, v := range extra {
		files[k] = v
	}
	return Load(filepath.Join(tree(t, files), "suite.yaml"))
}

// Two treatments that differ only in their system prompt differ in one
// identity component, named prompt: a comparison of them is an ablation
// of the prompt. Its value is the digest of the prompt as rendered for
// the case, so a template renders a prompt of its own per case.
func TestAPromptAblationDiffersInThePromptAlone(t *testing.T) {
	s, err := scaffoldSuite(t, "id: other\nmodel: {provider: scripted, scripts: scripts}\n"+
		"scaffold: {prompt_file: prompt.md, template: true}\n",
		map[string]string{"treatments/prompt.md": "Work on {{.id}}: {{.instruction}}\n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Cases {
		_, base, err := AgentIdentity(c, s.Treatments[0])
		if err != nil {
			t.Fatal(err)
		}
		_, other, err := AgentIdentity(c, s.Treatments[1])
		if err != nil {
			t.Fatal(err)
		}
		if d := measureDiff(base, other); d != ComponentPrompt {
			t.Fatalf("case %s: the treatments differ in %q, want only %s", c.ID, d, ComponentPrompt)
		}
		want := events.DigestOf([]byte("Work on " + c.ID + ": make check.sh pass\n"))
		for _, comp := range other {
			if comp.Name == ComponentPrompt && comp.Value != string(want) {
				t.Fatalf("case %s: prompt component %s, want the digest of the rendered prompt %s", c.ID, comp.Value, want)
			}
		}
	}
}

// A treatment whose prompt is today's default, written out, is the same
// agent as one that sets none: what the model is sent is the same.
func TestTheDefaultPromptWrittenOutIsTheSameAgent(t *testing.T) {
	s, err := scaffoldSuite(t, "id: other\nmodel: {provider: scripted, scripts: scripts}\nscaffold: {prompt_file: default.md}\n",
		map[string]string{"treatments/default.md": cases.DefaultSystemPrompt})
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := AgentIdentity(s.Cases[0], s.Treatments[0])
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := AgentIdentity(s.Cases[0], s.Treatments[1])
	if err != nil || a != b {
		t.Fatalf("identities %s and %s (%v)", a, b, err)
	}
}

// Choosing the tools offered changes the capabilities component alone
// (the tools offered, sorted); describing a tool adds a tool_descriptions
// component naming the tool and the digest of its description.
func TestToolChoicesAreTheirOwnComponents(t *testing.T) {
	s, err := scaffoldSuite(t, "id: other\nmodel: {provider: scripted, scripts: scripts}\n"+
		"scaffold: {tools: [task_complete, read_file, run_command]}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, base, _ := AgentIdentity(s.Cases[0], s.Treatments[0])
	_, other, err := AgentIdentity(s.Cases[0], s.Treatments[1])
	if err != nil {
		t.Fatal(err)
	}
	if d := measureDiff(base, other); d != ComponentCapabilities {
		t.Fatalf("differs in %q, want only capabilities", d)
	}
	if v := component(other, ComponentCapabilities); v != `["read_file","run_command","task_complete"]` {
		t.Fatalf("capabilities %s", v)
	}
	s, err = scaffoldSuite(t, "id: other\nmodel: {provider: scripted, scripts: scripts}\n"+
		"scaffold: {tool_descriptions: {run_command: Run one command.}}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err = AgentIdentity(s.Cases[0], s.Treatments[1])
	if err != nil {
		t.Fatal(err)
	}
	if d := measureDiff(base, other); d != ComponentToolDescriptions {
		t.Fatalf("differs in %q, want only tool_descriptions", d)
	}
	want := `{"run_command":"` + string(events.DigestOf([]byte("Run one command."))) + `"}`
	if v := component(other, ComponentToolDescriptions); v != want {
		t.Fatalf("tool_descriptions %s, want %s", v, want)
	}
}

func component(comps []events.Component, name string) string {
	for _, c := range comps {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// A template that reads a key the case lacks stops the suite when it is
// loaded, before anything is submitted, with a typed error naming the
// treatment, the case and the key; never a prompt with a gap in it.
func TestAPromptTemplateMissingAKeyStopsTheSuite(t *testing.T) {
	_, err := scaffoldSuite(t, "id: other\nmodel: {provider: scripted, scripts: scripts}\n"+
		"scaffold: {prompt: 'Repo {{.repo}}: {{.instruction}}', template: true}\n", nil)
	var pe *cases.PromptError
	if !errors.As(err, &pe) || pe.Treatment != "other" || pe.Key != "repo" || pe.Case != "add" {
		t.Fatalf("got %v (%+v), want a PromptError naming other, add and repo", err, pe)
	}
	var se *Error
	if !errors.As(err, &se) || !errors.Is(err, ErrInvalid) || !errors.Is(err, cases.ErrInvalid) {
		t.Fatalf("not a suite's invalid input: %v", err)
	}
	want := `suite.yaml:10: treatments[1]: treatments/other.yaml: treatment other: scaffold.prompt: case add has no field "repo"`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("the message %q does not say %q", err, want)
	}
	// A nested key is missing the same way.
	_, err = scaffoldSuite(t, "id: other\nmodel: {provider: scripted, scripts: scripts}\n"+
		"scaffold: {prompt: '{{.budget.hours}}', template: true}\n", nil)
	if !errors.As(err, &pe) || pe.Key != "hours" {
		t.Fatalf("a nested missing key: %v", err)
	}
}

// A treatment's tools that leave a case none stop the suite naming both.
func TestToolsThatLeaveACaseNoneStopTheSuite(t *testing.T) {
	files := map[string]string{"cases/add/case.yaml": strings.ReplaceAll(caseYAML, "%s", "add") + "tools: [read_file]\n"}
	_, err := scaffoldSuite(t, "id: other\nmodel: {provider: scripted, scripts: scripts}\nscaffold: {tools: [run_command]}\n", files)
	var ce *cases.Error
	if !errors.As(err, &ce) || ce.Field != "scaffold.tools" || !strings.Contains(err.Error(), "treatment other offers none of the tools case add allows") {
		t.Fatalf("got %v", err)
	}
}
