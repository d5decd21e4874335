package bus_test

import (
	"slices"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// SubmittedSuites names each suite whose suite.submitted the log holds,
// in the order submitted, and no suite that only has runs.
func TestSubmittedSuitesListsTheSubmittedSuitesInOrder(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	if got, err := b.SubmittedSuites(ctx); err != nil || len(got) != 0 {
		t.Fatalf("an empty log: %v, %v", got, err)
	}
	submit := func(suite string) {
		t.Helper()
		f, err := events.NewFact(events.Meta{Suite: suite, Run: events.SuiteScope, Position: 1,
			Producer: events.Producer{Service: events.OwnerSubmitter, Instance: "test"}},
			events.SuiteSubmitted{Name: suite, SpecDigest: events.DigestOf([]byte(suite)), Trials: 1,
				Cases:      []events.Ref{{ID: "c", Digest: events.DigestOf([]byte("c"))}},
				Treatments: []events.Ref{{ID: "t", Digest: events.DigestOf([]byte("t"))}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: f}); err != nil {
			t.Fatal(err)
		}
	}
	submit("nightly")
	appendRun(t, b, "runsonly", "r1", 1, 2, bus.Expect{})
	submit("adhoc")
	got, err := b.SubmittedSuites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"nightly", "adhoc"}; !slices.Equal(got, want) {
		t.Fatalf("SubmittedSuites = %v, want %v", got, want)
	}
}
