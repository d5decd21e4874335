package cases

import (
	"strings"
	"testing"
)

// A duration too long for the clock was written with a number and a unit;
// telling its author to "use a number with a unit" sends them looking for
// a mistake they did not make.
func TestADurationTooLongSaysSo(t *testing.T) {
	_, err := ParseCase("case.yaml", []byte("id: a\ninstruction: x\nbudget: {wall: 100000000h}\n"))
	if err == nil || !strings.Contains(err.Error(), "case.yaml:3: budget.wall: duration \"100000000h\" is too long (at most 2562047h") {
		t.Errorf("got %v, want it named as too long", err)
	}
	_, err = ParseCase("case.yaml", []byte("id: a\ninstruction: x\nbudget: {wall: 10 minutes}\n"))
	if err == nil || !strings.Contains(err.Error(), "use a number with a unit") {
		t.Errorf("got %v, want a malformed duration still told how to write one", err)
	}
}
