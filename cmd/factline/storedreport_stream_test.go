package main

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// The stored report is read as it streams from the store: a blob of
// many chunks is taken when it is the report's own JSON, refused (ok
// false) when it holds a field this build's report does not, and a blob
// the store does not hold is an error.
func TestTheStoredReportIsReadAsItStreams(t *testing.T) {
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := measure.Report{Suite: "s", Name: "s", Complete: true, Cases: []string{"c"}}
	for i := range 3000 { // ~1 MB of JSON: many chunks of the object store
		r.Attempts = append(r.Attempts, measure.AttemptRow{Run: "c-t-t" + string(rune('a'+i%26)), Case: "c", Treatment: "t",
			Trial: uint32(i + 1), Status: events.RunDone, Outcome: measure.OutcomePassed})
	}
	data, err := measure.EncodeJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	put := func(data []byte) events.Digest {
		d, err := b.Blobs().Put(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	got, ok, err := readStoredReport(ctx, b, put(data))
	if err != nil || !ok {
		t.Fatalf("the report's own blob: ok %v, %v", ok, err)
	}
	if again, _ := measure.EncodeJSON(got); !bytes.Equal(again, data) || len(got.Attempts) != 3000 {
		t.Fatalf("read %d attempts that encode to %d bytes, not the blob's %d", len(got.Attempts), len(again), len(data))
	}
	more := bytes.Replace(data, []byte(`"suite": "s",`), []byte(`"suite": "s", "newer": 1,`), 1)
	if _, ok, err := readStoredReport(ctx, b, put(more)); err != nil || ok {
		t.Fatalf("a blob with a field the report lacks: ok %v, %v", ok, err)
	}
	if _, _, err := readStoredReport(ctx, b, events.DigestOf([]byte("none"))); !errors.Is(err, bus.ErrBlobNotFound) {
		t.Fatalf("no blob: %v", err)
	}
}
