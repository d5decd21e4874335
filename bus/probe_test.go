package bus_test

import (
	"errors"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// A probe on a subject a stream stores is answered by the stream and
// stores nothing; one on a subject no stream stores says the stream is
// missing.
func TestProbePublishStoresNothing(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	subj, err := events.FactSubject("probe-suite", "probe-run", events.KindRunClaimed)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ProbePublish(ctx, subj); err != nil {
		t.Fatalf("probe on a stored subject: %v", err)
	}
	log, err := b.LoadRun(ctx, "probe-suite", "probe-run")
	if err != nil {
		t.Fatal(err)
	}
	if log.LastSeq != 0 {
		t.Fatalf("the probe stored a message at %d", log.LastSeq)
	}
	if err := b.ProbePublish(ctx, "nostream.probe"); !errors.Is(err, bus.ErrStreamMissing) {
		t.Fatalf("probe on a subject no stream stores: %v, want ErrStreamMissing", err)
	}
}
