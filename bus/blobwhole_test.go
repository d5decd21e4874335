package bus_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// bigBlob is more than the inline limit and more than one object store
// chunk (128 KiB), so that it is stored as chunks.
func bigBlob(seed string) []byte {
	return bytes.Repeat([]byte(seed+" holds a workspace file of several chunks\n"), 8000)
}

// startWithSideConn starts a bus on its own server and a second, plain
// connection to it, on which a test breaks a name the way a failed put
// does (bustest.BreakBlob).
func startWithSideConn(t *testing.T) (*bus.Bus, *nats.Conn) {
	t.Helper()
	b, srv := bustest.Start(t)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return b, nc
}

// blobCtx bounds a test of a broken blob in seconds: the old code's read
// waited for chunks that never came, a put stopped at the name.
func blobCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A put stops at a name only when the name holds its chunks: a name left
// by a put whose chunks were purged is stored again, and read whole.
func TestPutStoresAgainANameWithoutChunks(t *testing.T) {
	t.Parallel()
	ctx := blobCtx(t)
	b, nc := startWithSideConn(t)
	data := bigBlob("put")
	d, err := b.Blobs().Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	bustest.BreakBlob(ctx, t, nc, d)
	if _, err := b.Blobs().Put(ctx, data); err != nil {
		t.Fatalf("put again: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	got, err := b.Blobs().Get(rctx, d)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get after the put again: %d bytes, %v", len(got), err)
	}
}

// PutFrom, the streaming put, stores such a name again too.
func TestPutFromStoresAgainANameWithoutChunks(t *testing.T) {
	t.Parallel()
	ctx := blobCtx(t)
	b, nc := startWithSideConn(t)
	data := bigBlob("putfrom")
	d := events.DigestOf(data)
	if err := b.Blobs().PutFrom(ctx, d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	bustest.BreakBlob(ctx, t, nc, d)
	if err := b.Blobs().PutFrom(ctx, d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatalf("put again: %v", err)
	}
	var out bytes.Buffer
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if n, err := b.Blobs().GetTo(rctx, d, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("stream out after the put again: %d bytes, %v", n, err)
	}
}

// PutAfter (a request, stored as a delta when that pays) stores such a
// name again too.
func TestPutAfterStoresAgainANameWithoutChunks(t *testing.T) {
	t.Parallel()
	ctx := blobCtx(t)
	b, nc := startWithSideConn(t)
	data := bigBlob("putafter")
	v, err := b.Blobs().PutAfter(ctx, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	bustest.BreakBlob(ctx, t, nc, v.Digest)
	if _, err := b.Blobs().PutAfter(ctx, data, nil); err != nil {
		t.Fatalf("put again: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if got, err := b.Blobs().Get(rctx, v.Digest); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get after the put again: %d bytes, %v", len(got), err)
	}
}

// A read of a name without its chunks fails at once, typed, naming the
// blob: there is nothing to wait for. Get, GetTo and a delta whose base
// lost its chunks all say so.
func TestGetOfANameWithoutChunksIsIncomplete(t *testing.T) {
	t.Parallel()
	ctx := blobCtx(t)
	b, nc := startWithSideConn(t)
	base := bigBlob("base")
	bv, err := b.Blobs().PutAfter(ctx, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := append(bytes.Clone(base), "one more line\n"...)
	nv, err := b.Blobs().PutAfter(ctx, next, bv)
	if err != nil {
		t.Fatal(err)
	}
	bustest.BreakBlob(ctx, t, nc, bv.Digest)

	// The old code waited here for the whole of rctx (Get's attempts
	// stall): a bound well over one API request, well under one attempt.
	for _, tc := range []struct {
		name string
		get  func(context.Context) error
	}{
		{"Get", func(ctx context.Context) error { _, err := b.Blobs().Get(ctx, bv.Digest); return err }},
		{"GetTo", func(ctx context.Context) error {
			_, err := b.Blobs().GetTo(ctx, bv.Digest, &bytes.Buffer{})
			return err
		}},
		{"Get of a delta on it", func(ctx context.Context) error { _, err := b.Blobs().Get(ctx, nv.Digest); return err }},
	} {
		rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
		err := tc.get(rctx)
		cancel()
		if !errors.Is(err, bus.ErrBlobIncomplete) || !errors.Is(err, bus.ErrBlobNotFound) {
			t.Fatalf("%s: %v, want ErrBlobIncomplete (an ErrBlobNotFound)", tc.name, err)
		}
		if !strings.Contains(err.Error(), string(bv.Digest)) {
			t.Fatalf("%s: %q does not name the blob %s", tc.name, err, bv.Digest)
		}
		if bus.Transient(err) {
			t.Fatalf("%s: %v is Transient: a retry cannot mend it", tc.name, err)
		}
	}
}

// The real path: a put whose connection drops right after its metadata
// message reached the server fails, and the object store purges the
// chunks it sent; the put tried again stores the blob whole, and a
// reader on another connection gets its bytes.
func TestPutWhoseAnswersWereLostIsStoredWholeWhenTriedAgain(t *testing.T) {
	t.Parallel()
	ctx := blobCtx(t)
	_, srv := bustest.StartWith(t, bus.EmbeddedConfig{Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	p := bustest.StartProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), nil)
	w, err := bus.Dial(ctx, p.URL(), bus.Config{}, nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Conn().Close)
	reader := bustest.OpenWith(t, srv, bus.Config{})

	var once sync.Once
	cut := make(chan struct{})
	p.OnPublish(func(pub bustest.Publish) func() {
		if !strings.HasPrefix(pub.Subject, "$O."+bus.BlobBucket+".M.") {
			return nil
		}
		// The server takes the metadata message; its acknowledgement
		// and those of the chunks before it never reach the writer.
		return func() {
			once.Do(func() {
				p.LoseAnswers()
				go func() {
					time.Sleep(200 * time.Millisecond)
					p.Drop()
					time.Sleep(200 * time.Millisecond)
					p.Heal()
					close(cut)
				}()
			})
		}
	})
	data := bigBlob("lost")
	d := events.DigestOf(data)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = w.Blobs().Put(pctx, data)
	cancel()
	if err == nil {
		t.Fatal("the put whose answers were lost succeeded")
	}
	<-cut
	p.OnPublish(nil)
	var last error
	for i := 0; i < 20; i++ {
		if _, last = w.Blobs().Put(ctx, data); last == nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // the writer reconnects
	}
	if last != nil {
		t.Fatalf("the put tried again: %v", last)
	}
	rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
	defer rcancel()
	if got, err := reader.Blobs().Get(rctx, d); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("another connection's get: %d bytes, %v", len(got), err)
	}
}

// A reader that read a broken name's metadata while a put mended it is
// not told the blob is incomplete: the name holds the whole blob now, and
// Get reads it again.
func TestReadRacingAPutThatMendsANameIsNotIncomplete(t *testing.T) {
	t.Parallel()
	ctx := blobCtx(t)
	b, nc := startWithSideConn(t)
	data := bigBlob("race")
	d, err := b.Blobs().Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	bustest.BreakBlob(ctx, t, nc, d)
	got, err := b.Blobs().GetUnder(ctx, d, func() {
		if _, err := b.Blobs().Put(ctx, data); err != nil {
			t.Errorf("the mending put: %v", err)
		}
	})
	switch {
	case errors.Is(err, bus.ErrBlobNotFound):
		t.Fatalf("a read racing the mending put: %v", err)
	case err == nil && !bytes.Equal(got, data):
		t.Fatalf("a read racing the mending put got %d other bytes", len(got))
	case err != nil && !strings.Contains(err.Error(), "stored again"):
		t.Fatalf("a read racing the mending put: %v, want one that says the name was stored again", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if got, err := b.Blobs().Get(rctx, d); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get after the race: %d bytes, %v", len(got), err)
	}
}
