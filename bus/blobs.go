package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// ErrBlobNotFound is returned when no blob has the requested digest.
var ErrBlobNotFound = errors.New("blob not found")

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

// PutBlob stores data under its content digest and returns the digest.
// Storing the same bytes twice is free: the name already exists.
func (b *Bus) PutBlob(ctx context.Context, data []byte) (events.Digest, error) {
	ctx, cancel := boundCtx(ctx)
	defer cancel()
	d := events.DigestOf(data)
	if _, err := b.blobs.GetInfo(ctx, d.Hex()); err == nil {
		return d, nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", fmt.Errorf("put blob %s: %w", d, err)
	}
	if _, err := b.blobs.PutBytes(ctx, d.Hex(), data); err != nil {
		return "", fmt.Errorf("put blob %s: %w", d, err)
	}
	return d, nil
}

// GetBlob returns the bytes named by d, checking that they still match it.
func (b *Bus) GetBlob(ctx context.Context, d events.Digest) ([]byte, error) {
	ctx, cancel := boundCtx(ctx)
	defer cancel()
	if err := d.Validate("digest"); err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	data, err := b.blobs.GetBytes(ctx, d.Hex())
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("get blob %s: %w", d, ErrBlobNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", d, err)
	}
	if got := events.DigestOf(data); got != d {
		return nil, fmt.Errorf("get blob %s: content digest is %s: the store is corrupt", d, got)
	}
	return data, nil
}
