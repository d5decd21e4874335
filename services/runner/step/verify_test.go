package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// A rule reads diagnostics out of a failed check's output; cut output or
// no rule gives a partial set, and exit 0 is a pass.
func TestDiagnostics(t *testing.T) {
	rule := &DiagnosticRule{Pattern: `^(?P<file>[^:]+):(?P<line>\d+): (?P<message>.*)$`, Complete: true}
	v := VerificationOf(rule, 1, "calc.go:3: want 2, got 0\ncalc.go:9: undefined: Sub\nFAIL\n", false, 4)
	f, ok := v.Variant().(events.VerifyFailed)
	if !ok || f.SourceEpoch != 4 || !f.Complete || len(f.Diagnostics) != 2 || f.Diagnostics[1].Line != 9 || f.Diagnostics[0].File != "calc.go" {
		t.Fatalf("failed verification %+v", v.Variant())
	}
	if f := VerificationOf(rule, 1, "x\n", true, 4).Variant().(events.VerifyFailed); f.Complete {
		t.Fatal("cut output cannot give a complete set")
	}
	if f := VerificationOf(nil, 2, "boom\n", false, 1).Variant().(events.VerifyFailed); f.Complete || f.Diagnostics[0].Message != "boom" {
		t.Fatalf("no rule: %+v", f)
	}
	if _, ok := VerificationOf(rule, 0, "", false, 2).Variant().(events.VerifyPassed); !ok {
		t.Fatal("exit 0 is a pass")
	}
}
