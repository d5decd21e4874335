package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
)

// ErrBlobNotFound is returned when no blob has the requested digest.
var ErrBlobNotFound = errors.New("blob not found")

// ErrBlobCorrupt is returned when a blob's bytes do not match its digest.
var ErrBlobCorrupt = errors.New("the store is corrupt")

// blobTimeout bounds a blob transfer whose caller set no deadline: an
// object store read stalled by a stream leader lost mid-transfer must fail
// and be retried, not hang.
const blobTimeout = 2 * time.Minute

func boundCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, blobTimeout)
}

// Blobs is a bus's handle on the BLOBS object store: content-addressed
// payloads, whole or as deltas of an earlier version (blobdeltas.go), read
// and written whole or streamed (blobstream.go).
type Blobs struct{ b *Bus }

// Blobs returns the bus's handle on the blob store.
func (b *Bus) Blobs() *Blobs { return &Blobs{b: b} }

// Put stores data under its content digest and returns the digest.
// Storing the same bytes twice is free: the name already exists, whole
// (a name left without its chunks is stored again, blobwhole.go).
func (h *Blobs) Put(ctx context.Context, data []byte) (events.Digest, error) {
	b := h.b
	ctx, cancel := boundCtx(ctx)
	defer cancel()
	d := events.DigestOf(data)
	if _, ok, err := b.alreadyStored(ctx, d); err != nil {
		return "", err
	} else if ok {
		return d, nil
	}
	// A put whose acknowledgements stop coming (a leader lost mid-transfer)
	// fails in bounded time for its caller to retry; a retry of the same
	// name replaces whatever part of it was stored.
	pctx, pcancel := context.WithTimeout(ctx, blobAttempt(uint64(len(data))))
	defer pcancel()
	if _, err := b.blobs.PutBytes(pctx, d.Hex(), data); err != nil {
		return "", fmt.Errorf("put blob %s: %w", d, err)
	}
	return d, nil
}

// blobInfo asks for a blob's metadata, bounded like every API request: the
// caller's deadline may be far off, and a request whose answer was lost
// with a stream leader would wait for all of it.
func (b *Bus) blobInfo(ctx context.Context, d events.Digest) (*jetstream.ObjectInfo, error) {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	return b.blobs.GetInfo(actx, d.Hex())
}

// Get returns the bytes named by d, checking that they still match it.
// A read that stalls (its chunks stop coming, as when the stream's leader is
// lost mid-transfer) is abandoned after blobAttempt and tried again, until
// ctx or blobTimeout ends.
func (h *Blobs) Get(ctx context.Context, d events.Digest) ([]byte, error) {
	b := h.b
	ctx, cancel := boundCtx(ctx)
	defer cancel()
	if err := d.Validate("digest"); err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	for attempt := 0; ; attempt++ {
		data, err := b.getBlobOnce(ctx, d)
		switch {
		case err == nil:
			return data, nil
		case errors.Is(err, ErrBlobNotFound) || errors.Is(err, ErrBlobCorrupt) || ctx.Err() != nil:
			return nil, err
		}
		b.log.Warn("blob read failed; trying again", "digest", d, "attempt", attempt+1, "err", err)
		if serr := sleep.For(ctx, backoff(min(attempt, 4))); serr != nil {
			return nil, err
		}
	}
}

func (b *Bus) getBlobOnce(ctx context.Context, d events.Digest) ([]byte, error) {
	if data, ok := b.rebuilt.Get(d); ok {
		return bytes.Clone(data), nil // the caller may change what it gets
	}
	info, err := b.blobInfo(ctx, d)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("get blob %s: %w", d, ErrBlobNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", d, err)
	}
	return b.readBlob(ctx, d, info)
}

// blobAttempt bounds one read of a blob of size bytes: a floor plus a slow
// link's rate, so a large blob is not cut short while a stalled read is
// noticed in seconds.
func blobAttempt(size uint64) time.Duration {
	return 10*time.Second + time.Duration(size>>20)*time.Second
}
