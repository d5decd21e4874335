package bus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// PutFrom stores the size bytes read from r under d, the digest the
// caller computed of them, without holding them: the object store reads r
// chunk by chunk. A blob already stored whole under d is not read again. Bytes
// whose digest or length is not d's are removed again and reported as
// ErrBlobCorrupt, so that no name ever holds content it does not name.
func (h *Blobs) PutFrom(ctx context.Context, d events.Digest, size int64, r io.Reader) error {
	b := h.b
	ctx, cancel := boundCtx(ctx)
	defer cancel()
	if err := d.Validate("digest"); err != nil {
		return fmt.Errorf("put blob: %w", err)
	}
	if _, ok, err := b.alreadyStored(ctx, d); err != nil || ok {
		return err
	}
	pctx, pcancel := context.WithTimeout(ctx, blobAttempt(uint64(max(size, 0))))
	defer pcancel()
	hr := &hashingReader{r: r, h: sha256.New()}
	if _, err := b.blobs.Put(pctx, jetstream.ObjectMeta{Name: d.Hex()}, hr); err != nil {
		return fmt.Errorf("put blob %s: %w", d, err)
	}
	if got := hex.EncodeToString(hr.h.Sum(nil)); got != d.Hex() || hr.n != size {
		_ = b.blobs.Delete(ctx, d.Hex())
		return fmt.Errorf("put blob %s: the %d bytes read have digest sha256:%s: %w", d, hr.n, got, ErrBlobCorrupt)
	}
	return nil
}

// GetTo writes the blob named by d to w without holding it, checking
// its digest as it goes, and returns how many bytes it wrote. On
// ErrBlobCorrupt (or any error) w has received bytes that must be
// discarded. Unlike Get it makes one attempt, bounded like one of
// Get's: w cannot be rewound, so trying again is the caller's call.
func (bl *Blobs) GetTo(ctx context.Context, d events.Digest, w io.Writer) (int64, error) {
	b := bl.b
	ctx, cancel := boundCtx(ctx)
	defer cancel()
	if err := d.Validate("digest"); err != nil {
		return 0, fmt.Errorf("get blob: %w", err)
	}
	info, err := b.blobInfo(ctx, d)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return 0, fmt.Errorf("get blob %s: %w", d, ErrBlobNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("get blob %s: %w", d, err)
	}
	if isDelta(info) || isInline(info) {
		// A delta or an inline blob is a small request rebuilt in
		// memory, never a workspace file too large to hold.
		data, err := b.readBlob(ctx, d, info)
		if err != nil {
			return 0, err
		}
		n, err := w.Write(data)
		return int64(n), err
	}
	if err := b.checkWhole(ctx, d, info); err != nil {
		return 0, err
	}
	actx, acancel := context.WithTimeout(ctx, blobAttempt(info.Size))
	defer acancel()
	res, err := b.blobs.Get(actx, d.Hex())
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return 0, fmt.Errorf("get blob %s: %w", d, ErrBlobNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("get blob %s: %w", d, err)
	}
	defer res.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), res)
	if errors.Is(err, jetstream.ErrDigestMismatch) {
		return n, fmt.Errorf("get blob %s: %v: %w", d, err, ErrBlobCorrupt)
	}
	if err != nil {
		return n, fmt.Errorf("get blob %s: %w", d, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d.Hex() {
		return n, fmt.Errorf("get blob %s: content digest is sha256:%s: %w", d, got, ErrBlobCorrupt)
	}
	return n, nil
}

// hashingReader hashes and counts what is read through it.
type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}
