package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus/blobdelta"
	"github.com/factline/factline/events"
)

// A blob stored as a delta is still named by the digest of its whole
// bytes; its object's metadata says it is a delta (blobdelta's stored
// form) and how many deltas lie between it and a whole blob. An object
// without that metadata holds the whole bytes, as every blob did before
// deltas: old stores read unchanged.
const (
	metaEncoding = "factline-encoding"
	encodedDelta = "delta"
	metaDepth    = "factline-depth"
)

// MaxDeltaDepth bounds how many deltas a read follows to a whole blob: a
// blob whose base is already this deep is stored whole.
const MaxDeltaDepth = 32

// BlobVersion is a blob as PutAfter stored it, kept by its writer so
// that the next version of the same content (the next turn's request) can
// be stored as what changed since.
type BlobVersion struct {
	// Digest names the blob's whole bytes.
	Digest events.Digest
	data   []byte
	depth  int
}

// PutAfter stores data under its digest like Put, as a delta of
// prev when that pays: prev is not nil, its chain is shorter than
// MaxDeltaDepth and the delta is under half of data. A stored form of up
// to 16 KiB is stored inline (blobinline.go): one message. Get returns the
// whole bytes either way. A blob already stored is left as it is.
func (h *Blobs) PutAfter(ctx context.Context, data []byte, prev *BlobVersion) (*BlobVersion, error) {
	b := h.b
	ctx, cancel := boundCtx(ctx)
	defer cancel()
	d := events.DigestOf(data)
	v := &BlobVersion{Digest: d, data: data}
	meta := jetstream.ObjectMeta{Name: d.Hex()}
	stored := data
	if prev != nil && prev.depth < MaxDeltaDepth && prev.Digest != d {
		if enc := blobdelta.Make(string(prev.Digest), prev.data, data).Encode(); len(enc) < len(data)/2 {
			v.depth = prev.depth + 1
			stored = enc
			meta.Metadata = map[string]string{metaEncoding: encodedDelta, metaDepth: strconv.Itoa(v.depth)}
		}
	}
	if len(stored) <= inlineMax {
		err := b.putInline(ctx, d, meta, stored)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, errNameTaken) {
			return nil, err
		}
		// Stored already (or deleted, which a put below replaces).
	}
	if info, ok, err := b.alreadyStored(ctx, d); err != nil {
		return nil, err
	} else if ok {
		v.depth = depthOf(info)
		return v, nil
	}
	pctx, pcancel := context.WithTimeout(ctx, blobAttempt(uint64(len(stored))))
	defer pcancel()
	if _, err := b.blobs.Put(pctx, meta, bytes.NewReader(stored)); err != nil {
		return nil, fmt.Errorf("put blob %s: %w", d, err)
	}
	return v, nil
}

// BlobStored says how a blob is stored: the size of its stored form (its
// delta, or its whole bytes) and how many deltas a read of it follows.
type BlobStored struct {
	Size  uint64
	Depth int
}

// Stat returns how the blob named by d is stored.
func (h *Blobs) Stat(ctx context.Context, d events.Digest) (BlobStored, error) {
	b := h.b
	info, err := b.blobInfo(ctx, d)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return BlobStored{}, fmt.Errorf("stat blob %s: %w", d, ErrBlobNotFound)
	}
	if err != nil {
		return BlobStored{}, fmt.Errorf("stat blob %s: %w", d, err)
	}
	size := info.Size
	if isInline(info) {
		raw, err := inlineBytes(d, info)
		if err != nil {
			return BlobStored{}, fmt.Errorf("stat blob %s: %w", d, err)
		}
		size = uint64(len(raw))
	}
	return BlobStored{Size: size, Depth: depthOf(info)}, nil
}

// DeltaBase returns the blob that the blob named by d is stored as a
// delta of, or "" when d is stored whole; ErrBlobNotFound when d is not
// stored. It reads only d's stored form (a delta is under half of the blob
// it makes, and one of up to 16 KiB is in the object's metadata), never
// the base or the whole blob: a caller that follows the bases with
// DeltaBase down to a whole blob knows the blob can be rebuilt without
// rebuilding it. A stored form that is no delta, or names no digest, is
// ErrBlobCorrupt.
func (h *Blobs) DeltaBase(ctx context.Context, d events.Digest) (events.Digest, error) {
	b := h.b
	ctx, cancel := boundCtx(ctx)
	defer cancel()
	info, err := b.blobInfo(ctx, d)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", fmt.Errorf("blob %s: %w", d, ErrBlobNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("blob %s: %w", d, err)
	}
	if !isDelta(info) {
		return "", nil
	}
	raw, stored, err := b.objectBytes(ctx, d, info)
	if err != nil {
		return "", err
	}
	if !isDelta(stored) {
		return "", nil // stored again whole meanwhile
	}
	dl, err := blobdelta.Decode(raw)
	if err != nil {
		return "", fmt.Errorf("blob %s: stored delta: %v: %w", d, err, ErrBlobCorrupt)
	}
	base := events.Digest(dl.Base)
	if err := base.Validate("base"); err != nil {
		return "", fmt.Errorf("blob %s: stored delta: %v: %w", d, err, ErrBlobCorrupt)
	}
	return base, nil
}

func isDelta(info *jetstream.ObjectInfo) bool { return info.Metadata[metaEncoding] == encodedDelta }

// depthOf is how many deltas lie below a stored blob; a whole blob's is 0.
func depthOf(info *jetstream.ObjectInfo) int {
	if !isDelta(info) {
		return 0
	}
	n, err := strconv.Atoi(info.Metadata[metaDepth])
	if err != nil || n < 1 {
		// Unknown: as deep as allowed, so that nothing is stored on it.
		return MaxDeltaDepth
	}
	return n
}

// readBlob reads the blob named d whose object info was just read: the
// whole bytes as stored, or, for a delta, rebuilt by following the bases
// down to a whole blob or one rebuilt recently (b.rebuilt), at most
// MaxDeltaDepth deltas (a longer or circular chain is a corrupt store, not
// a reason to read forever), and applying them upwards. Every blob read or
// rebuilt is checked against its name.
func (b *Bus) readBlob(ctx context.Context, d events.Digest, info *jetstream.ObjectInfo) ([]byte, error) {
	var chain []blobdelta.Delta
	var data []byte
	for name := d; ; {
		if len(chain) > 0 {
			if cached, ok := b.rebuilt.Get(name); ok {
				data = cached
				break
			}
		}
		raw, stored, err := b.objectBytes(ctx, name, info)
		if err != nil {
			return nil, err
		}
		if !isDelta(stored) {
			data = raw
			if got := events.DigestOf(data); got != name {
				return nil, fmt.Errorf("get blob %s: %s has content digest %s: %w", d, name, got, ErrBlobCorrupt)
			}
			break
		}
		if len(chain) == MaxDeltaDepth {
			return nil, fmt.Errorf("get blob %s: more than %d deltas to a whole blob: %w", d, MaxDeltaDepth, ErrBlobCorrupt)
		}
		dl, err := blobdelta.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("get blob %s: stored delta of %s: %v: %w", d, name, err, ErrBlobCorrupt)
		}
		if err := events.Digest(dl.Base).Validate("base"); err != nil {
			return nil, fmt.Errorf("get blob %s: stored delta of %s: %v: %w", d, name, err, ErrBlobCorrupt)
		}
		chain = append(chain, dl)
		name = events.Digest(dl.Base)
		if info, err = b.blobInfo(ctx, name); errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("get blob %s: its base %s is missing: %w", d, name, ErrBlobCorrupt)
		} else if err != nil {
			return nil, fmt.Errorf("get blob %s: base %s: %w", d, name, err)
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		var err error
		if data, err = chain[i].Apply(data); err != nil {
			return nil, fmt.Errorf("get blob %s: %v: %w", d, err, ErrBlobCorrupt)
		}
		name := d
		if i > 0 {
			name = events.Digest(chain[i-1].Base)
		}
		if got := events.DigestOf(data); got != name {
			return nil, fmt.Errorf("get blob %s: %s rebuilt has content digest %s: %w", d, name, got, ErrBlobCorrupt)
		}
	}
	if len(chain) > 0 {
		b.rebuilt.Put(d, bytes.Clone(data)) // data goes to the caller, who may change it
	}
	return data, nil
}

// objectBytes reads a stored object whole, bounded by the size info gives,
// and returns it with the info it was read under (a concurrent writer may
// have stored the name again meanwhile, whole or as a delta).
func (b *Bus) objectBytes(ctx context.Context, d events.Digest, info *jetstream.ObjectInfo) ([]byte, *jetstream.ObjectInfo, error) {
	if isInline(info) {
		raw, err := inlineBytes(d, info)
		return raw, info, err
	}
	if err := b.checkWhole(ctx, d, info); err != nil {
		return nil, nil, err
	}
	actx, cancel := context.WithTimeout(ctx, blobAttempt(info.Size))
	defer cancel()
	res, err := b.blobs.Get(actx, d.Hex())
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, nil, fmt.Errorf("get blob %s: %w", d, ErrBlobNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get blob %s: %w", d, err)
	}
	defer res.Close()
	stored, err := res.Info()
	if err != nil {
		return nil, nil, fmt.Errorf("get blob %s: %w", d, err)
	}
	// Room for the stored size at once: io.ReadAll doubles its buffer as
	// it goes, so a large blob was held about twice while it was read (an
	// export reads every blob its facts name). MinRead more, so that the
	// read that finds the end does not grow it either.
	buf := bytes.NewBuffer(make([]byte, 0, min(info.Size, maxBlobPrealloc)+bytes.MinRead))
	if _, err := buf.ReadFrom(res); err != nil {
		return nil, nil, fmt.Errorf("get blob %s: %w", d, err)
	}
	return buf.Bytes(), stored, nil
}
