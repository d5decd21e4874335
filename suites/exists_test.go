package suites

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// DiffSpecs names each difference between the log's spec and the file's,
// and nothing when they are the same.
func TestDiffSpecsNamesEachDifference(t *testing.T) {
	d := func(c byte) events.Digest { return events.Digest("sha256:" + strings.Repeat(string(c), 64)) }
	had := Spec{Name: "s", Split: "dev", Trials: 1, Cases: []events.Ref{{ID: "a", Digest: d('1')}, {ID: "b", Digest: d('2')}},
		Treatments: []events.Ref{{ID: "t", Digest: d('3')}}}
	if got := DiffSpecs(had, had); len(got) != 0 {
		t.Fatalf("the same spec differs in %v", got)
	}
	want := had
	want.Trials = 3
	want.Cases = []events.Ref{{ID: "a", Digest: d('4')}, {ID: "c", Digest: d('5')}}
	want.Treatments = []events.Ref{{ID: "t", Digest: d('3')}, {ID: "u", Digest: d('6')}}
	got := strings.Join(DiffSpecs(had, want), "; ")
	for _, w := range []string{"case a changed", "case c is new", "case b was left out", "treatment u is new", "trials: 1 in the log, 3 in the file"} {
		if !strings.Contains(got, w) {
			t.Errorf("the differences %q lack %q", got, w)
		}
	}
}
