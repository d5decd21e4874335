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

// A blob streamed in is the blob Get returns and GetTo streams out;
// bytes that are not what the caller named are refused and not kept.
func TestBlobStreams(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	data := bytes.Repeat([]byte("a large workspace file "), 200_000) // ~4.6 MB, many chunks
	d := events.DigestOf(data)
	if err := b.Blobs().PutFrom(ctx, d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Blobs().Get(ctx, d); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after PutFrom: %d bytes, %v", len(got), err)
	}
	var out bytes.Buffer
	if n, err := b.Blobs().GetTo(ctx, d, &out); err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("GetTo: %d bytes, %v", n, err)
	}
	// Stored already: the reader is not read.
	if err := b.Blobs().PutFrom(ctx, d, int64(len(data)), failingReader{}); err != nil {
		t.Fatalf("a second put read its reader: %v", err)
	}
	// Content that is not the digest's is refused and removed.
	wrong := events.DigestOf([]byte("something else"))
	if err := b.Blobs().PutFrom(ctx, wrong, int64(len(data)), bytes.NewReader(data)); !errors.Is(err, bus.ErrBlobCorrupt) {
		t.Fatalf("mislabelled content: %v", err)
	}
	if _, err := b.Blobs().Get(ctx, wrong); !errors.Is(err, bus.ErrBlobNotFound) {
		t.Fatalf("mislabelled content was kept: %v", err)
	}
	short := []byte("short")
	if err := b.Blobs().PutFrom(ctx, events.DigestOf(short), 99, bytes.NewReader(short)); !errors.Is(err, bus.ErrBlobCorrupt) {
		t.Fatalf("a wrong size: %v", err)
	}
	if _, err := b.Blobs().GetTo(ctx, events.DigestOf([]byte("nope")), &out); !errors.Is(err, bus.ErrBlobNotFound) {
		t.Fatalf("missing blob: %v", err)
	}
	if err := b.Blobs().PutFrom(ctx, "sha256:zz", 1, strings.NewReader("x")); err == nil {
		t.Fatal("a malformed digest was accepted")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("read") }
