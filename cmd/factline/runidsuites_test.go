package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// A run's ID is unique within its suite only: the same case and treatment
// in two suites of one store get the same run ID. A control command naming
// the ID alone used to send its signal to whichever suite had written
// last; it now refuses, naming both suites, and --suite picks one.
func TestAControlToARunIDTwoSuitesShareNamesTheSuites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := t.TempDir()
	const run = "fix-sum-baseline-t1"
	b, done := openStoreBus(ctx, t, store)
	for _, suite := range []string{"nightly", "weekly"} {
		d := events.DigestOf([]byte(suite))
		f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: 1,
			Producer: events.Producer{Service: events.OwnerMeter, Instance: "test-meter"}},
			events.RunRequested{Case: "fix-sum", CaseDigest: d, Treatment: "baseline", TreatmentDigest: d, Trial: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: f}); err != nil {
			t.Fatal(err)
		}
	}
	done()

	code, out, errOut := runCLI(t, "cancel", run, "--wait", "0", "--store", store)
	if code != 1 || !strings.Contains(errOut, "nightly, weekly") || !strings.Contains(errOut, "--suite") {
		t.Fatalf("cancel by a shared run ID: exit %d, stdout %q, stderr %q; want exit 1 naming both suites and --suite", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "cancel", run, "--suite", "nightly", "--wait", "0", "--store", store)
	if code != 0 || !strings.Contains(out, "nightly/"+run) {
		t.Fatalf("cancel --suite nightly: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "cancel", run, "--suite", "monthly", "--wait", "0", "--store", store)
	if code != 1 || !strings.Contains(errOut, `suite "monthly" holds no run`) || !strings.Contains(errOut, "nightly, weekly") {
		t.Fatalf("cancel --suite of a suite without the run: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "cancel", run, "--suite", "a.b", "--store", store); code != 2 {
		t.Fatalf("cancel --suite a.b: exit %d, stderr %q; want a usage error", code, errOut)
	}
}
