package bench

import (
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// The header bytes B2 reports must be the bytes stored with each fact, not
// what a read hands back: a direct get adds Nats-Stream, Nats-Subject,
// Nats-Sequence and Nats-Time-Stamp, which the stream never stores. A fact
// the file store holds is a 34-byte record frame, its subject, its header
// block ("NATS/1.0\r\n", each header, "\r\n") and its body, so what the
// stream grew by pins the header bytes exactly.
func TestHeaderBytesAreTheBytesTheStreamStores(t *testing.T) {
	ctx := testCtx(t)
	s, err := startServer(ctx, t.TempDir(), bus.SyncInterval, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	before, _, err := storedBytes(ctx, s.b)
	if err != nil {
		t.Fatal(err)
	}
	// Two facts of one run, the second linked to the first by
	// Factline-Prev; the mean over both is half their header bytes.
	var expect bus.Expect
	var body int
	for pos := uint64(1); pos <= 2; pos++ {
		f, err := runFact("hdr", "r", pos)
		if err != nil {
			t.Fatal(err)
		}
		subj, err := f.Subject()
		if err != nil {
			t.Fatal(err)
		}
		data, err := events.EncodeStored(f) // as the bus stores it
		if err != nil {
			t.Fatal(err)
		}
		recs, err := s.b.Append(ctx, expect, bus.Pending{Fact: f})
		if err != nil {
			t.Fatal(err)
		}
		expect = expect.Then(recs[0].Seq)
		const frame = 22 + 4 + 8 // record length, sequence, time, subject length; header length; hash
		body += frame + len(subj) + len(data) + len("NATS/1.0\r\n") + len("\r\n")
	}
	after, _, err := storedBytes(ctx, s.b)
	if err != nil {
		t.Fatal(err)
	}
	prev, hdr, err := headerBytes(ctx, s.b, "hdr")
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(int(after-before)-body) / 2; hdr != want {
		t.Errorf("header bytes per fact = %v, the stream stored %v", hdr, want)
	}
	if prev <= 0 || prev >= hdr {
		t.Errorf("Factline-Prev bytes per fact = %v, want some of the %v header bytes", prev, hdr)
	}
}
