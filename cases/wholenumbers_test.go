package cases

import (
	"errors"
	"strings"
	"testing"
)

// A whole-number field given a fraction, or a number in quotes, is
// refused naming the field and the line; the decoder would otherwise
// truncate 2.5 to 2 (or read "1e3" as 1000) without a word.
func TestAFractionInAWholeNumberFieldIsRefusedByName(t *testing.T) {
	for _, tc := range []struct{ yaml, field, got string }{
		{"context:\n  mode: window\n  window_turns: 2.5\n", "context.window_turns", "2.5"},
		{"context:\n  max_tokens: \"1e3\"\n", "context.max_tokens", `a string ("1e3")`},
		{"context:\n  max_tokens: .inf\n", "context.max_tokens", ".inf"},
	} {
		var v struct {
			Context ContextPolicy `yaml:"context"`
		}
		err := DecodeYAML("case.yaml", []byte(tc.yaml), &v)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%q: err = %v, want an *Error", tc.yaml, err)
		}
		if e.Field != tc.field || e.Line == 0 || !strings.Contains(e.Msg, "whole number") || !strings.Contains(e.Msg, tc.got) {
			t.Fatalf("%q: %+v, want field %s, a line, and 'whole number ... %s'", tc.yaml, e, tc.field, tc.got)
		}
	}
}

// Fractions where the field holds a number, and whole numbers where it
// holds one, still decode.
func TestNumbersThatFitTheirFieldStillDecode(t *testing.T) {
	var v struct {
		Context ContextPolicy      `yaml:"context"`
		Weights map[string]float64 `yaml:"weights"`
		Lists   [][]int            `yaml:"lists"`
	}
	err := DecodeYAML("case.yaml", []byte("context:\n  window_turns: 3\nweights:\n  a: 0.5\nlists:\n  - [1, 2]\n"), &v)
	if err != nil || v.Context.WindowTurns != 3 || v.Weights["a"] != 0.5 || v.Lists[0][1] != 2 {
		t.Fatalf("err = %v, v = %+v", err, v)
	}
	err = DecodeYAML("case.yaml", []byte("lists:\n  - [1, 2.5]\n"), &v)
	var e *Error
	if !errors.As(err, &e) || e.Field != "lists[0][1]" {
		t.Fatalf("a fraction in a list of lists: %v, want it refused at lists[0][1]", err)
	}
}
