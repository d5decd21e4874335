package bus_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// requested appends a run's run.requested, as the meter starts a run.
func requested(t *testing.T, b *bus.Bus, suite, run string) {
	t.Helper()
	d := events.DigestOf([]byte(suite + "/" + run))
	f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: 1,
		Producer: events.Producer{Service: events.OwnerMeter, Instance: "test-meter"}},
		events.RunRequested{Case: "fix-sum", CaseDigest: d, Treatment: "baseline", TreatmentDigest: d, Trial: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(testCtx(t), bus.Expect{}, bus.Pending{Fact: f}); err != nil {
		t.Fatal(err)
	}
}

// Rule: run IDs are unique within a suite only, so a run ID two suites
// started is no address: FindSuite names both suites rather than pick the
// one that wrote last (a cancel would reach the wrong suite's run).
func TestARunIDTwoSuitesStartedIsAmbiguous(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	requested(t, b, "nightly", "fix-sum-baseline-t1")
	requested(t, b, "weekly", "fix-sum-baseline-t1")
	appendRun(t, b, "nightly", "fix-sum-baseline-t1", 2, 1, bus.ExpectLast(1))

	suite, err := b.FindSuite(ctx, "fix-sum-baseline-t1")
	var amb *bus.AmbiguousRunError
	if !errors.As(err, &amb) || !errors.Is(err, bus.ErrAmbiguousRun) {
		t.Fatalf("FindSuite = %q, %v; want an AmbiguousRunError", suite, err)
	}
	if !slices.Equal(amb.Suites, []string{"nightly", "weekly"}) {
		t.Fatalf("suites %v, want [nightly weekly] in the order they started the run", amb.Suites)
	}
}

// Rule: a run ID one suite started names that suite, however many facts
// of other runs the log holds.
func TestARunIDOneSuiteStartedNamesIt(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	requested(t, b, "nightly", "r1")
	requested(t, b, "weekly", "r2")
	if suite, err := b.FindSuite(ctx, "r2"); err != nil || suite != "weekly" {
		t.Fatalf("FindSuite(r2) = %q, %v; want weekly", suite, err)
	}
	// A log holding the run's facts but not its start is answered by its
	// newest fact, as before.
	appendRun(t, b, "monthly", "r3", 1, 2, bus.Expect{})
	if suite, err := b.FindSuite(ctx, "r3"); err != nil || suite != "monthly" {
		t.Fatalf("FindSuite(r3) = %q, %v; want monthly", suite, err)
	}
	if _, err := b.FindSuite(ctx, "r4"); err == nil {
		t.Fatal("FindSuite of a run the log does not hold succeeded")
	}
}
