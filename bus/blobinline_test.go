package bus_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// blobMessages is how many messages the blob bucket's stream holds.
func blobMessages(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	ctx := testCtx(t)
	st, err := b.JetStream().Stream(ctx, "OBJ_"+bus.BlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// A turn's request waits for its store before its reply is committed, so
// a small version costs one append to the blob stream (one fsync with
// fsync always) and one request to the server: no lookups first, no
// separate chunk. It still reads back whole and exact, and says how it is
// stored.
func TestASmallBlobVersionIsOneMessageAndOneRequest(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	var prev *bus.BlobVersion
	for i := range 6 {
		data := grownRequest(i)
		msgs, out := blobMessages(t, b), b.Conn().Stats().OutMsgs
		v, err := b.Blobs().PutAfter(ctx, data, prev)
		if err != nil {
			t.Fatal(err)
		}
		sent := b.Conn().Stats().OutMsgs - out
		if grown := blobMessages(t, b) - msgs; grown != 1 || sent != 1 {
			t.Errorf("version %d: the blob stream grew by %d messages and the bus sent %d; want 1 and 1", i, grown, sent)
		}
		got, err := b.Blobs().Get(ctx, v.Digest)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("version %d: Get %d bytes, %v; want %d", i, len(got), err, len(data))
		}
		var w bytes.Buffer
		if n, err := b.Blobs().GetTo(ctx, v.Digest, &w); err != nil || n != int64(len(data)) || !bytes.Equal(w.Bytes(), data) {
			t.Fatalf("version %d: GetTo %d bytes, %v", i, n, err)
		}
		st, err := b.Blobs().Stat(ctx, v.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if st.Depth != i || st.Size == 0 || (i > 0 && st.Size >= uint64(len(data))/2) {
			t.Errorf("version %d of %d bytes: stored %+v; want depth %d and a delta's size", i, len(data), st, i)
		}
		prev = v
	}
}

// A name is stored by its first writer: a second put of the same bytes,
// at once from another writer or later as a delta of another base, leaves
// what is stored and reports its depth.
func TestTheFirstWriterOfABlobNameWins(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	base, err := b.Blobs().PutAfter(ctx, grownRequest(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	data := grownRequest(4)
	var wg sync.WaitGroup
	vs := make([]*bus.BlobVersion, 4)
	errs := make([]error, len(vs))
	for i := range vs {
		wg.Go(func() {
			prev := base
			if i%2 == 1 {
				prev = nil // stores it whole if it is first
			}
			vs[i], errs[i] = b.Blobs().PutAfter(ctx, data, prev)
		})
	}
	wg.Wait()
	st, err := b.Blobs().Stat(ctx, events.DigestOf(data))
	if err != nil {
		t.Fatal(err)
	}
	for i := range vs {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		if got, err := b.Blobs().Get(ctx, vs[i].Digest); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("writer %d's version reads %v", i, err)
		}
	}
	msgs := blobMessages(t, b)
	again, err := b.Blobs().PutAfter(ctx, data, base)
	if err != nil {
		t.Fatal(err)
	}
	if grown := blobMessages(t, b) - msgs; grown != 0 {
		t.Errorf("storing a stored name again appended %d messages", grown)
	}
	if st2, _ := b.Blobs().Stat(ctx, again.Digest); st2 != st {
		t.Errorf("stored again: %+v, was %+v", st2, st)
	}
	// The next version after it chains on the depth actually stored.
	next, err := b.Blobs().PutAfter(ctx, grownRequest(5), again)
	if err != nil {
		t.Fatal(err)
	}
	if st3, _ := b.Blobs().Stat(ctx, next.Digest); st3.Depth != st.Depth+1 {
		t.Errorf("next version's depth %d over a stored depth %d", st3.Depth, st.Depth)
	}
}
