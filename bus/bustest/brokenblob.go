package bustest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// BreakBlob leaves the stored blob d as nats.go's object store leaves a
// put whose acknowledgements failed after its metadata message was
// stored (its purgePartial): the name's metadata, and no chunks on its
// chunk subject. d must be a chunked blob (larger than the inline limit).
func BreakBlob(ctx context.Context, t testing.TB, nc *nats.Conn, d events.Digest) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, bus.BlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := obs.GetInfo(ctx, d.Hex())
	if err != nil {
		t.Fatal(err)
	}
	if info.Chunks < 2 {
		t.Fatalf("the blob %s has %d chunks; breaking it wants a chunked one", d, info.Chunks)
	}
	s, err := js.Stream(ctx, "OBJ_"+bus.BlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject("$O."+bus.BlobBucket+".C."+info.NUID)); err != nil {
		t.Fatal(err)
	}
}
