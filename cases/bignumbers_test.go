package cases

import (
	"errors"
	"strings"
	"testing"
)

// A number too large for a whole-number field, or one written with an
// exponent, was written without quotes: the error must say what is wrong
// with the number, never that the author wrote a string.
func TestAnUnquotedNumberThatDoesNotFitIsNotCalledAString(t *testing.T) {
	for _, tc := range []struct{ yaml, field, want string }{
		{"id: a\ninstruction: x\nbudget: {steps: 100000000000000000000000}\n", "budget.steps", "100000000000000000000000 is too large"},
		{"id: a\ninstruction: x\nbudget: {cost: 1e30}\n", "budget.cost", "got 1e30"},
		{"id: a\ninstruction: x\ncontext: {max_tokens: 100000000000000000000000}\n", "context.max_tokens", "100000000000000000000000 is too large"},
		{"id: a\ninstruction: x\ncontext: {max_tokens: 1e3}\n", "context.max_tokens", "got 1e3"},
	} {
		_, err := ParseCase("case.yaml", []byte(tc.yaml))
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%q: err = %v, want an *Error", tc.yaml, err)
		}
		if e.Field != tc.field || e.Line == 0 || !strings.Contains(e.Msg, tc.want) || strings.Contains(e.Msg, "a string") {
			t.Errorf("%q: %v, want field %s, a line and %q, not 'a string'", tc.yaml, err, tc.field, tc.want)
		}
	}
}
