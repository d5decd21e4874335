package bus_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// The response cache's bucket is made on first use, not when a bus opens;
// an entry reads back as stored, the newest put wins, a missing key is no
// entry, and a key that is no digest is refused before NATS is asked.
func TestCacheEntries(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	if _, err := b.JetStream().KeyValue(ctx, bus.CacheBucket); err != jetstream.ErrBucketNotFound {
		t.Fatalf("the cache bucket exists before anything cached: %v", err)
	}
	key := events.DigestOf([]byte("identity+request"))
	if v, ok, err := b.Responses().Get(ctx, key); err != nil || ok || v != "" {
		t.Fatalf("empty cache: %q %v %v", v, ok, err)
	}
	first, second := events.DigestOf([]byte("entry 1")), events.DigestOf([]byte("entry 2"))
	for _, e := range []events.Digest{first, second} {
		if err := b.Responses().Put(ctx, key, e); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := b.Responses().Get(ctx, key); err != nil || !ok || v != string(second) {
		t.Fatalf("got %q %v %v, want %s", v, ok, err, second)
	}
	if _, _, err := b.Responses().Get(ctx, "not-a-digest"); err == nil {
		t.Fatal("a key that is no digest was looked up")
	}
	if err := b.Responses().Put(ctx, key, "nope"); err == nil {
		t.Fatal("an entry that is no digest was stored")
	}
}
