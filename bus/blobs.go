package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// ErrBlobNotFound is returned when no blob has the requested digest.
var ErrBlobNotFound = errors.New("blob not found")

// PutBlob stores data under its content digest and returns the digest.
// Storing the same bytes twice is free: the name already exists.
func (b *Bus) PutBlob(ctx context.Context, data []byte) (events.Digest, error) {
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
