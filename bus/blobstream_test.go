package bus_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// A blob streamed in is the blob GetBlob returns and GetBlobTo streams out;
// bytes that are not what the caller named are refused and not kept.
func TestBlobStreams(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	data := bytes.Repeat([]byte("a large workspace file "), 200_000) // ~4.6 MB, many chunks
	d := events.DigestOf(data)
	if err := b.PutBlobFrom(ctx, d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetBlob(ctx, d); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetBlob after PutBlobFrom: %d bytes, %v", len(got), err)
	}
	var out bytes.Buffer
	if n, err := b.GetBlobTo(ctx, d, &out); err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("GetBlobTo: %d bytes, %v", n, err)
	}
	// Stored already: the reader is not read.
	if err := b.PutBlobFrom(ctx, d, int64(len(data)), failingReader{}); err != nil {
		t.Fatalf("a second put read its reader: %v", err)
	}
	// Content that is not the digest's is refused and removed.
	wrong := events.DigestOf([]byte("something else"))
	if err := b.PutBlobFrom(ctx, wrong, int64(len(data)), bytes.NewReader(data)); !errors.Is(err, bus.ErrBlobCorrupt) {
		t.Fatalf("mislabelled content: %v", err)
	}
	if _, err := b.GetBlob(ctx, wrong); !errors.Is(err, bus.ErrBlobNotFound) {
		t.Fatalf("mislabelled content was kept: %v", err)
	}
	short := []byte("short")
	if err := b.PutBlobFrom(ctx, events.DigestOf(short), 99, bytes.NewReader(short)); !errors.Is(err, bus.ErrBlobCorrupt) {
		t.Fatalf("a wrong size: %v", err)
	}
	if _, err := b.GetBlobTo(ctx, events.DigestOf([]byte("nope")), &out); !errors.Is(err, bus.ErrBlobNotFound) {
		t.Fatalf("missing blob: %v", err)
	}
	if err := b.PutBlobFrom(ctx, "sha256:zz", 1, strings.NewReader("x")); err == nil {
		t.Fatal("a malformed digest was accepted")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("read") }
