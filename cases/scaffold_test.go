package cases

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const scriptedTreatment = "id: t\nmodel: {provider: scripted, scripts: s}\n"

// Every mistake in a scaffold is refused when the treatment is parsed,
// naming the file, the field and the treatment; an unknown tool is named.
func TestBadScaffoldsAreRefused(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"scaffold: {tools: [read_file, grep]}", `t.yaml:3: scaffold.tools[1]: treatment t offers unknown tool "grep"`},
		{"scaffold: {tools: [read_file, read_file]}", `t.yaml:3: scaffold.tools[1]: treatment t offers tool "read_file" twice`},
		{"scaffold: {tool_descriptions: {grep: finds}}", `t.yaml:3: scaffold.tool_descriptions.grep: treatment t describes unknown tool "grep"`},
		{"scaffold: {tools: [read_file], tool_descriptions: {run_command: runs}}", `scaffold.tool_descriptions.run_command: treatment t describes tool "run_command", which its tools do not offer`},
		{"scaffold: {tool_descriptions: {run_command: '  '}}", `scaffold.tool_descriptions.run_command: treatment t gives tool "run_command" an empty description`},
		{"scaffold: {prompt: hi, prompt_file: p.md}", "scaffold.prompt_file: treatment t sets both prompt and prompt_file"},
		{"scaffold: {template: true}", "scaffold.template: treatment t renders a template but sets no prompt"},
		{"scaffold: {prompt: ' '}", "scaffold.prompt: treatment t sets an empty prompt"},
		{"scaffold: {prompt: 'Case {{.id', template: true}", "scaffold.prompt: treatment t: template: prompt:1: unclosed action"},
		{"scaffold: {promt: hi}", "promt"},
		{`scaffold: {prompt: '{{define "a"}}x{{end}}{{template "a"}}', template: true}`, "may not define templates"},
		{`scaffold: {prompt: '{{template "a"}}', template: true}`, `may not call templates ({{template "a"}})`},
		{"scaffold: {prompt: '{{range 1000000000}}{{end}}', template: true}", "ranges only over the case's fields, not 1000000000"},
		{"scaffold: {prompt: '{{range len .checks}}{{end}}', template: true}", "ranges only over the case's fields"},
		{"scaffold: {prompt: '{{range .checks}}{{range $.checks}}{{end}}{{end}}', template: true}", "may not range inside a range"},
		{"scaffold: {prompt: '{{range .checks}}{{else}}{{range .tools}}{{end}}{{end}}', template: true}", "may not range inside a range"},
		{"scaffold: {prompt: '" + strings.Repeat("{{range .checks}}{{end}}", MaxPromptRanges+1) + "', template: true}", "at most 64 ranges"},
	} {
		_, err := ParseTreatment("t.yaml", []byte(scriptedTreatment+c.yaml+"\n"))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.yaml, err, c.want)
		}
	}
	long := "scaffold: {prompt: " + strings.Repeat("a", MaxPromptBytes+1) + "}\n"
	if _, err := ParseTreatment("t.yaml", []byte(scriptedTreatment+long)); err == nil || !strings.Contains(err.Error(), "the limit is 262144") {
		t.Errorf("an oversized prompt: %v", err)
	}
}

// A prompt file is read when the treatment is loaded, relative to the
// treatment file and confined like its scripts; its text then travels in
// the stored treatment, and the file's path does not.
func TestAPromptFileTravelsInTheTreatment(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"t.yaml":           scriptedTreatment + "scaffold: {prompt_file: prompts/p.md}\n",
		"prompts/p.md":     "Be brief.\n",
		"s/x.yaml":         "turns: []\n",
		"empty.yaml":       scriptedTreatment + "scaffold: {prompt_file: prompts/empty.md}\n",
		"prompts/empty.md": "\n",
		"missing.yaml":     scriptedTreatment + "scaffold: {prompt_file: nope.md}\n",
		"badtpl.yaml":      scriptedTreatment + "scaffold: {prompt_file: prompts/bad.md, template: true}\n",
		"prompts/bad.md":   "{{if}}",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := LoadTreatment(filepath.Join(dir, "t.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Scaffold.Prompt != "Be brief.\n" {
		t.Fatalf("prompt %q", tr.Scaffold.Prompt)
	}
	blob, err := tr.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(blob, []byte(`"scaffold":{"prompt":"Be brief.\n"}`)) || bytes.Contains(blob, []byte("p.md")) {
		t.Fatalf("stored treatment %s", blob)
	}
	back, err := DecodeTreatment(blob)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := SystemPrompt(&Case{ID: "c"}, back); err != nil || got != "Be brief.\n" {
		t.Fatalf("the stored treatment's prompt %q (%v)", got, err)
	}
	for name, want := range map[string]string{
		"empty.yaml":   "scaffold.prompt_file: treatment t sets an empty prompt",
		"missing.yaml": "scaffold.prompt_file: ",
		"badtpl.yaml":  "scaffold.prompt_file: treatment t: template: prompt:1: missing value for if",
	} {
		_, err := LoadTreatment(filepath.Join(dir, name))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), filepath.Join(dir, name)+": "+want) {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
	// Confined like every other input: a prompt outside the allowed root
	// is not read.
	deny := func(p string) (string, error) {
		if strings.HasSuffix(p, ".md") {
			return "", errors.New("outside the suite's directory")
		}
		return p, nil
	}
	if _, err := LoadTreatmentWithin(filepath.Join(dir, "t.yaml"), deny); err == nil || !strings.Contains(err.Error(), "scaffold.prompt_file: outside the suite's directory") {
		t.Errorf("a confined prompt file: %v", err)
	}
}

// A treatment without a scaffold is run with today's system prompt, byte
// for byte, and its stored form has no scaffold in it: the treatment
// digests of existing treatments do not change.
func TestNoScaffoldIsTodaysAgent(t *testing.T) {
	tr, err := ParseTreatment("t.yaml", []byte(scriptedTreatment))
	if err != nil {
		t.Fatal(err)
	}
	c := &Case{ID: "c", Tools: []string{"read_file", "run_command"}}
	got, err := SystemPrompt(c, tr)
	if err != nil || got != DefaultSystemPrompt {
		t.Fatalf("prompt %q (%v)", got, err)
	}
	blob, err := tr.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(blob, []byte("scaffold")) {
		t.Fatalf("stored %s", blob)
	}
	if o := OfferedTools(c, tr); strings.Join(o, ",") != "read_file,run_command" || ToolDescriptions(c, tr) != nil {
		t.Fatalf("offered %v", o)
	}
}

// A template reads the case's fields under their case-file keys; tools are
// those offered under the treatment, and what publishing adds (the
// fixture's digest) is not there, so the prompt is the same before the
// suite is published and after.
func TestAPromptTemplateReadsTheCase(t *testing.T) {
	tr, err := ParseTreatment("t.yaml", []byte(scriptedTreatment+`scaffold:
  template: true
  tools: [run_command, read_file]
  prompt: "{{.id}}|{{.instruction}}|{{.tools}}|{{.budget.steps}}|{{range .checks}}{{.id}}:{{.command}}{{end}}|{{.env.LANG}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCase("c.yaml", []byte("id: c\ninstruction: fix <it> & go\nbudget: {steps: 1000000}\nchecks: [{id: t, command: ./t.sh}]\nenv: {LANG: C}\n"))
	if err != nil {
		t.Fatal(err)
	}
	before, err := SystemPrompt(c, tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := "c|fix <it> & go|[read_file run_command]|1000000|t:./t.sh|C"; before != want {
		t.Fatalf("rendered %q, want %q", before, want)
	}
	c.FixtureDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	if after, err := SystemPrompt(c, tr); err != nil || after != before {
		t.Fatalf("published, it renders %q (%v)", after, err)
	}
	tr.Scaffold.Prompt = "{{.fixture_digest}}"
	if _, err := SystemPrompt(c, tr); err == nil {
		t.Fatal("the fixture's digest is readable")
	}
}

// docs/case.md shows the default prompt as it is, byte for byte.
func TestTheDocumentedDefaultPromptIsTheDefault(t *testing.T) {
	page, err := os.ReadFile("../docs/case.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("```text\n"+DefaultSystemPrompt+"\n```")) {
		t.Fatal("docs/case.md does not show cases.DefaultSystemPrompt as it is")
	}
}

// A template's output is cut off where it passes the bound, as it is
// written: a template cannot make the meter hold more than the bound.
func TestARenderedPromptIsBounded(t *testing.T) {
	tr, err := ParseTreatment("t.yaml", []byte(scriptedTreatment+"scaffold: {prompt: '{{range .tools}}{{$.instruction}}{{end}}', template: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Case{ID: "c", Instruction: strings.Repeat("x", MaxInstruction), Tools: []string{"read_file", "run_command"}}
	_, err = SystemPrompt(c, tr)
	var pe *PromptError
	if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "passes the limit of 262144 bytes") {
		t.Fatalf("got %v", err)
	}
	c.Tools = c.Tools[:1]
	if out, err := SystemPrompt(c, tr); err != nil || len(out) != MaxInstruction {
		t.Fatalf("one instruction's worth: %d bytes, %v", len(out), err)
	}
}

// Whatever the template, rendering it ends in a prompt within the bound
// or a PromptError; it never panics.
func FuzzSystemPrompt(f *testing.F) {
	for _, seed := range []string{
		"Case {{.id}}: {{.instruction}}",
		"{{range $i, $c := .checks}}{{if $i}}, {{end}}{{$c.id}}{{end}}",
		"{{with .env}}{{.LANG}}{{else}}none{{end}}",
		"{{.budget.steps}} {{len .tools}} {{index .tools 0}} {{printf \"%q\" .instruction}}",
		"{{.nosuch}}",
		"{{range .requirements}}{{break}}{{end}}",
		"{{ $x := .tools }}{{range $x}}{{.}}{{end}}",
	} {
		f.Add(seed)
	}
	c, err := ParseCase("c.yaml", []byte("id: c\ninstruction: fix it\nbudget: {steps: 3}\nchecks: [{id: t, command: ./t.sh}]\nenv: {LANG: C}\n"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, prompt string) {
		tr := &Treatment{ID: "t", Scaffold: &Scaffold{Prompt: prompt, Template: true}}
		if tr.Scaffold.check("scaffold", "t") != nil {
			return
		}
		out, err := SystemPrompt(c, tr)
		if err != nil {
			var pe *PromptError
			if !errors.As(err, &pe) || pe.Treatment != "t" || pe.Case != "c" {
				t.Fatalf("%q: an error of another kind: %v", prompt, err)
			}
			return
		}
		if len(out) > MaxPromptBytes || strings.TrimSpace(out) == "" {
			t.Fatalf("%q rendered %d bytes", prompt, len(out))
		}
	})
}
