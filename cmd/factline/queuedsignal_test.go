package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
)

// A signal to a run no runner has claimed yet is not lost: the runner that
// claims it takes it in before the first turn (while CONTROL keeps it).
// When --wait runs out first, the command says so, instead of asking
// whether a runner is on a run that is only queued.
func TestASignalToAQueuedRunSaysItWaitsForTheClaim(t *testing.T) {
	t.Parallel()
	b, _ := bustest.Start(t)
	p := fleettest.Published{Case: &cases.Case{ID: "c"}, CaseDigest: events.DigestOf([]byte("case")),
		Treatment: &cases.Treatment{ID: "t"}, TreatmentDigest: events.DigestOf([]byte("treatment"))}
	if err := fleettest.Request(context.Background(), b, "s", "queued-t1", p, 1); err != nil {
		t.Fatal(err)
	}
	sig := events.Control{ID: "cancel-1", Signal: events.SignalCancel, Reason: "not needed"}
	var out bytes.Buffer
	err := awaitAcceptance(context.Background(), b, "s", "queued-t1", sig, 300*time.Millisecond, &out)
	if err == nil || !strings.Contains(err.Error(), "no runner has claimed the run yet") || !strings.Contains(err.Error(), "before its first turn") ||
		strings.Contains(err.Error(), "is a runner on the run?") {
		t.Errorf("a signal to a queued run, not accepted in time: %v", err)
	}
}
