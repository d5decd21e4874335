package cases

import (
	"errors"
	"strings"
	"testing"
)

// A value of the wrong type names the field as the author wrote it (and the
// line), never a Go type or struct.
func TestTypeErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"id: a\ninstruction: x\nbudget: {steps: \"ten\"}\n", `bad.yaml:3: budget.steps: want a whole number, got a string ("ten")`},
		{"id: a\ninstruction: x\nbudget:\n  steps: ten\n", "bad.yaml:4: budget.steps: want a whole number"},
		{"id: a\ninstruction: x\nbudget:\n  steps: 1.5\n", "bad.yaml:4: budget.steps: want a whole number, got 1.5"},
		{"id: a\ninstruction: x\nbudget: {input_tokens: [1]}\n", "budget.input_tokens: want a whole number, got a list"},
		{"id: a\ninstruction: x\nbudget: {wall: 5}\n", `bad.yaml:3: budget.wall: duration "5"`},
		{"id: a\ninstruction: x\nbudget: 7\n", "bad.yaml:3: budget: want a mapping"},
		{"id: a\ninstruction: [x]\n", "bad.yaml:2: instruction: want a string, got a list"},
		{"id: a\ninstruction: x\nchecks:\n  - {id: t, command: x, timeout: soon}\n", `bad.yaml:4: checks[0].timeout: duration "soon"`},
		{"id: a\ninstruction: x\ncontext: {window_turns: ten}\n", "context.window_turns: want a whole number, got a string"},
		{"id: a\ninstruction: x\nrequires_write: maybe\n", "requires_write: want true or false"},
		{"id: a\ninstruction: x\nchecks:\n  - {id: t, command: x, colour: red}\n", `bad.yaml:4: checks[0].colour: unknown key`},
		{"id: a\ninstruction: x\nstall: {repeated_failure: many}\n", "stall.repeated_failure: want a whole number"},
	} {
		_, err := ParseCase("bad.yaml", []byte(c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got  %v\n want %q", c.yaml, err, c.want)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "Go ") || strings.Contains(msg, "int64") || strings.Contains(msg, "uint") {
			t.Errorf("%q: the error speaks Go: %s", c.yaml, msg)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"id: t\nmodel: {provider: openai, name: x, temperature: hot}\n", "bad.yaml:2: model.temperature: want a number, got a string"},
		{"id: t\nmodel: {provider: openai, name: x, max_output_tokens: many}\n", "model.max_output_tokens: want a whole number"},
		{"id: t\nmodel: openai\n", "bad.yaml:2: model: want a mapping"},
	} {
		_, err := ParseTreatment("bad.yaml", []byte(c.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%q:\n got  %v\n want %q", c.yaml, err, c.want)
		}
	}
}
