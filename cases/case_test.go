package cases

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestLoadCaseFillsDefaults(t *testing.T) {
	c, err := LoadCase("testdata/fix-add/case.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Budget.Steps != 6 || len(c.Tools) != len(BuiltinTools)-2 || slices.Contains(c.Tools, "http_call") || slices.Contains(c.Tools, DelegateTool) || c.Context.Mode != ContextFull {
		t.Fatalf("defaults not filled: %+v", c)
	}
	if len(c.Requirements) != 1 || c.Requirements[0].Check != "tests" {
		t.Fatalf("a required check should become a requirement: %+v", c.Requirements)
	}
	if !strings.HasSuffix(c.Fixture, "testdata/fix-add/fixture") {
		t.Fatalf("fixture not resolved against the case file: %s", c.Fixture)
	}
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeCase(data)
	if err != nil || back.ID != c.ID || back.Checks[0].Timeout != c.Checks[0].Timeout {
		t.Fatalf("stored case round trip: %+v, %v", back, err)
	}
}

func TestBadCases(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"instruction: x\n", "id: empty subject token"},
		{"id: a.b\ninstruction: x\n", "id:"},
		{"id: a\n", "instruction: required"},
		{"id: a\ninstruction: x\ntools: [rm_rf]\n", `tools[0]: unknown tool "rm_rf"`},
		{"id: a\ninstruction: x\nchecks:\n  - id: t\n", "checks[0].command: required"},
		{"id: a\ninstruction: x\nchecks:\n  - {id: t, command: x}\n  - {id: t, command: y}\n", `checks[1].id: duplicate check id "t"`},
		{"id: a\ninstruction: x\nchecks:\n  - {id: t, command: x, timeout: soon}\n", `duration "soon"`},
		{"id: a\ninstruction: x\nchecks:\n  - {id: t, command: x, diagnostics: {pattern: '('}}\n", "checks[0].diagnostics.pattern"},
		{"id: a\ninstruction: x\nchecks:\n  - {id: t, command: x, diagnostics: {pattern: 'x'}}\n", "(?P<message>"},
		{"id: a\ninstruction: x\nrequirements:\n  - {id: r, check: nope}\n", `requirements[0].check: no check with id "nope"`},
		{"id: a\ninstruction: x\ncontext: {mode: magic}\n", `context.mode: unknown mode "magic"`},
		{"id: a\ninstruction: x\ncontext: {mode: summarise}\n", "context.summarise: mode \"summarise\" needs a summarise policy"},
		{"id: a\ninstruction: x\ncontext: {mode: summarise, summarise: {keep_last: 2}}\n", "context.summarise: no trigger"},
		{"id: a\ninstruction: x\ncontext: {mode: summarise, summarise: {trigger_turns: 2, keep_first: -1}}\n", "context.summarise: trigger_tokens, trigger_turns, keep_first and keep_last cannot be negative"},
		{"id: a\ninstruction: x\ncontext: {mode: window, summarise: {trigger_turns: 2}}\n", `context.summarise: only mode "summarise" summarises`},
		{"id: a\ninstruction: x\ncontext: {mode: summarise, summarise: {trigger_turns: 2, promt: x}}\n", "promt"},
		{"id: a\ninstruction: x\nstall: {idle_turns: -1}\n", "stall.idle_turns: cannot be negative"},
		{"id: a\ninstruction: x\ninstrucshun: y\n", "instrucshun"},
		{"id: a\ninstruction: [x\n", "bad.yaml"},
		{"id: a\ninstruction: x\ntools: [http_call]\n", "tools: http_call needs an http section"},
		{"id: a\ninstruction: x\nbudget: {stepz: 3}\n", "stepz"},
		{"id: a\ninstruction: x\nbudget: {cost: -2}\n", "budget.cost: -2 is negative"},
		{"id: a\ninstruction: x\nhttp: {allow: [ftp://x]}\n", "http.allow[0]"},
		{"id: a\ninstruction: x\nhttp: {allow: ['http://127.0.0.1/'], status: 'http://127.0.0.1/s'}\n", "http.status: the template needs {operation}"},
		{"id: a\ninstruction: x\nextensions: [notes, notes]\n", `extensions[1]: extension "notes" is listed twice`},
		{"id: a\ninstruction: x\nextensions: ['no tes']\n", "extensions[0]: "},
	}
	for _, c := range cases {
		_, err := ParseCase("bad.yaml", []byte(c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "bad.yaml") {
			t.Errorf("%q: got %v, want an error naming bad.yaml and containing %q", c.yaml, err, c.want)
		}
	}
}

func TestTreatmentOverridesCase(t *testing.T) {
	c, err := LoadCase("testdata/fix-add/case.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := LoadTreatment("testdata/scripted/treatment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Model.ScriptFiles["fix-add"] == "" {
		t.Fatalf("scripts not loaded: %+v", tr.Model)
	}
	eff := Apply(c, tr)
	if eff.Stall.RepeatedFailure != 3 || eff.Stall.IdleTurns != DefaultStall.IdleTurns {
		t.Fatalf("stall limits %+v", eff.Stall)
	}
	data, _ := tr.Encode()
	back, err := DecodeTreatment(data)
	if err != nil || back.Model.ScriptFiles["fix-add"] != tr.Model.ScriptFiles["fix-add"] {
		t.Fatalf("stored treatment round trip: %v", err)
	}
	for _, bad := range []string{"id: t\nmodel: {provider: gpt}\n", "id: t\nmodel: {provider: openai}\n", "id: t\nmodel: {}\n"} {
		if _, err := ParseTreatment("t.yaml", []byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}

// A case names extensions by name; the names travel with the case and an
// empty list leaves the stored case as it was.
func TestCaseExtensions(t *testing.T) {
	c, err := ParseCase("c.yaml", []byte("id: a\ninstruction: x\nextensions: [notes, search]\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Encode()
	back, err := DecodeCase(b)
	if err != nil || strings.Join(back.Extensions, ",") != "notes,search" {
		t.Fatalf("round trip: %v %v", back, err)
	}
	plain, _ := ParseCase("c.yaml", []byte("id: a\ninstruction: x\n"))
	if b, _ := plain.Encode(); strings.Contains(string(b), "extensions") {
		t.Fatalf("a case without extensions encodes them: %s", b)
	}
}

func TestModelSettingsAreChecked(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"id: t\nmodel: {provider: openai, name: m, top_p: 0}\n", "model.top_p: want a probability mass above 0 and at most 1"},
		{"id: t\nmodel: {provider: openai, name: m, top_p: 1.5}\n", "model.top_p"},
		{"id: t\nmodel: {provider: openai, name: m, reasoning_effort: extreme}\n", `model.reasoning_effort: unknown effort "extreme"`},
	} {
		_, err := ParseTreatment("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
	tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m, top_p: 0.9, reasoning_effort: low}\n"))
	if err != nil || *tr.Model.TopP != 0.9 || tr.Model.ReasoningEffort != "low" {
		t.Fatalf("treatment %+v, %v", tr, err)
	}
}

// A summarise policy's defaults are spelled out when it is read: the last
// two turns stay, and the default prompt asks for the summary.
func TestASummarisePolicyGetsItsDefaults(t *testing.T) {
	c, err := ParseCase("c.yaml", []byte("id: a\ninstruction: x\ncontext: {mode: summarise, max_tokens: 900, summarise: {keep_first: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Context.Summarise
	if s == nil || s.KeepLast != 2 || s.KeepFirst != 1 || s.Prompt != DefaultSummarisePrompt || c.Context.MaxTokens != 900 {
		t.Fatalf("policy %+v %+v", c.Context, s)
	}
}

// An instruction of whitespace alone is no task: the model would be sent
// nothing to do. It is refused as an absent one is, naming the file, the
// line of its key and the field.
func TestAWhitespaceInstructionIsRefused(t *testing.T) {
	for _, y := range []string{
		"id: a\ninstruction: \"  \\n\\t \"\n",
		"id: a\ninstruction: |\n    \n\n",
		"id: a\ninstruction: \"\\u00a0\\u2003\"\n",
	} {
		_, err := ParseCase("bad.yaml", []byte(y))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "bad.yaml:2: instruction: ") {
			t.Errorf("%q: got %v, want an error naming bad.yaml:2: instruction", y, err)
		}
	}
}

// A bad subject token is named once, under the file's path to it: the
// token check's own name for it ("id: empty subject token") was kept in
// the message, which then read "bad.yaml: id: id: empty subject token".
func TestABadTokenIsNamedOnce(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"instruction: x\n", "bad.yaml: id: empty subject token"},
		{"id: a.b\ninstruction: x\n", `bad.yaml:1: id: character '.' at byte 1 of "a.b" is not allowed in a subject token`},
		{"id: a\ninstruction: x\nchecks:\n  - {id: 'a b', command: x}\n", `checks[0].id: character ' ' at byte 1`},
		{"id: a\ninstruction: x\nchecks:\n  - {id: t, command: x}\nrequirements:\n  - {id: '', check: t}\n", "requirements[0].id: empty subject token"},
		{"id: a\ninstruction: x\nextensions: ['no tes']\n", `extensions[0]: character ' ' at byte 2`},
	} {
		_, err := ParseCase("bad.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.yaml, err, c.want)
		}
	}
	_, err := ParseTreatment("t.yaml", []byte("id: ''\nmodel: {provider: openai, name: m}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "t.yaml") || !strings.HasSuffix(err.Error(), ": id: empty subject token") || strings.Contains(err.Error(), "id: id:") {
		t.Errorf("treatment: got %v, want t.yaml…: id: empty subject token", err)
	}
}

// A treatment file's errors name the line of the key they are about, as a
// case file's do.
func TestTreatmentErrorsNameTheLineOfTheirKey(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"id: ''\nmodel: {provider: openai, name: m}\n", "t.yaml:1: id: empty subject token"},
		{"id: t\nmodel:\n  provider: gpt\n", "t.yaml:3: model.provider: "},
	} {
		_, err := ParseTreatment("t.yaml", []byte(c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q…", c.yaml, err, c.want)
		}
	}
}
