package meter

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/meter/measure"
)

// The meter stores a report's JSON streamed, under the digest of
// EncodeJSON's bytes and holding those bytes, and a report stored before
// is not written again: the writer the store did not read is stopped,
// not left blocked.
func TestTheReportBlobIsEncodeJSONsBytes(t *testing.T) {
	b, _ := bustest.Start(t)
	s := kittest.Must(New(b))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := measure.Report{Suite: "s", Name: "s", Complete: true, Cases: []string{"c"}}
	for i := range 3000 { // more than one chunk of the object store
		r.Attempts = append(r.Attempts, measure.AttemptRow{Run: "c-t-t" + string(rune('a'+i%26)), Case: "c", Treatment: "t<1>",
			Trial: uint32(i + 1), Status: events.RunDone, Outcome: measure.OutcomePassed})
	}
	want, err := measure.EncodeJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	for try := range 2 {
		d, err := s.storeReport(ctx, r)
		if err != nil {
			t.Fatalf("store %d: %v", try+1, err)
		}
		if d != events.DigestOf(want) {
			t.Fatalf("store %d: digest %s, the JSON's is %s", try+1, d, events.DigestOf(want))
		}
		got, err := b.Blobs().Get(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("store %d: the blob holds %d bytes, not the report's %d", try+1, len(got), len(want))
		}
	}
}
