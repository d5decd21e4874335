package runner

import (
	"testing"
	"time"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/services/runner/step"
)

// A run given up may have no case (it could not be read), and still a
// call in flight to settle: its lookup is judged against the default
// settle window, and reading the window does not fail for want of a case.
func TestALookupWithoutACaseIsJudgedOnTheDefaultSettleWindow(t *testing.T) {
	a := &attempt{}
	if got := a.settling(time.Now().Add(time.Hour)).Window; got != step.Nanos(cases.DefaultSettle) {
		t.Fatalf("window %v, want the default %v", time.Duration(got), cases.DefaultSettle)
	}
	a.kase = &cases.Case{HTTP: &cases.HTTPPolicy{Settle: cases.Duration(1500 * time.Millisecond)}}
	s := a.settling(time.Now().Add(time.Hour))
	if s.Window != 1500*step.Millisecond || s.SinceQuiet >= 0 {
		t.Fatalf("%+v, want the case's window of 1.5s, before quiet", s)
	}
}
