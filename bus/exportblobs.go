package bus

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/events"
)

// exportBlobPart bounds the bytes of one blob entry of a version 3
// export. A reader decodes an entry whole (and the decoder keeps a copy
// while it does), so a blob of many megabytes is written as parts: no
// reader then holds more than one part besides the blob itself.
const exportBlobPart = 1 << 20

// exportBlobEntry is one part of a blob in a version 3 export. Data is
// last so that a reader can find where a part's bytes start.
type exportBlobEntry struct {
	Blob   string `msgpack:"blob"`
	Size   uint64 `msgpack:"size"`
	Offset uint64 `msgpack:"offset"`
	Data   []byte `msgpack:"data"`
}

// maxBlobPrealloc bounds the room a reader makes for a blob before its
// bytes come: a damaged file may claim any size.
const maxBlobPrealloc = 256 << 20

var digestType = reflect.TypeFor[events.Digest]()

// namedDigests returns the well-formed digests f's body holds, in the
// order of its fields, each once. It walks the body rather than listing
// the fields that name blobs, so that a digest field a later fact kind
// adds is carried without a change here; a digest that names no blob (an
// identity) is found missing from the store and passed over. Whether a
// blob is missing is events.BlobRefs' word, not this walk's.
func namedDigests(f events.Fact) []events.Digest {
	var out []events.Digest
	seen := map[events.Digest]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		if v.Type() == digestType {
			if d := events.Digest(v.String()); d.Validate("digest") == nil && !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
			return
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return // bytes hold no digest field
			}
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				walk(it.Key())
				walk(it.Value())
			}
		}
	}
	if f.Body != nil {
		walk(reflect.ValueOf(f.Body))
	}
	return out
}

// exportBlob writes the blob d names to enc as parts, when the store
// holds it, and returns how many entries it wrote and whether the store
// held it. The blob is read whole once (Blobs.Get rebuilds a delta and
// checks the bytes against d) and written from that one copy.
func (b *Bus) exportBlob(ctx context.Context, enc *msgpack.Encoder, d events.Digest, res *PortResult) (int, bool, error) {
	data, err := b.Blobs().Get(ctx, d)
	if errors.Is(err, ErrBlobNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n := 0
	for off := 0; ; {
		end := min(off+exportBlobPart, len(data))
		if err := enc.Encode(exportBlobEntry{Blob: string(d), Size: uint64(len(data)), Offset: uint64(off), Data: data[off:end]}); err != nil {
			return n, true, err
		}
		n++
		if off = end; off == len(data) {
			break
		}
	}
	res.Blobs++
	res.BlobBytes += int64(len(data))
	return n, true, nil
}

// blobParts is a blob of a version 3 export whose parts are being read.
type blobParts struct {
	d          events.Digest
	size, next uint64
	first      int   // the entry of its first part
	start      int64 // where that entry starts in the file
	h          hash.Hash
	keep       bool // whether data collects the bytes
	data       []byte
}

// blobError is an ErrExportBadBlob about the blob d; the reader adds the
// file and the entries read.
func blobError(d events.Digest, problem string, args ...any) error {
	return &ExportError{Kind: ErrExportBadBlob, Digest: d, Problem: fmt.Sprintf(problem, args...)}
}

// startBlob begins a blob at its first part, entry i, which starts at
// byte start of the file.
func startBlob(i int, e exportItem, start int64, keep bool) (*blobParts, error) {
	d := events.Digest(e.Blob)
	if err := d.Validate("blob"); err != nil {
		return nil, blobError("", "entry %d names no blob digest: %v", i, err)
	}
	if e.Offset != 0 {
		return nil, blobError(d, "entry %d holds blob %s from byte %d, but no part of it came before: its first parts were lost", i, d, e.Offset)
	}
	p := &blobParts{d: d, size: e.Size, first: i, start: start, h: sha256.New(), keep: keep}
	if keep {
		// Room for the whole blob at once, so that growing it does not
		// hold two copies; bounded, since the size is the file's word.
		p.data = make([]byte, 0, min(e.Size, maxBlobPrealloc))
	}
	return p, p.add(i, e)
}

// add reads entry i, the next part of p.
func (p *blobParts) add(i int, e exportItem) error {
	switch {
	case events.Digest(e.Blob) != p.d || e.Size != p.size:
		return blobError(p.d, "entry %d holds a part of blob %s (%d bytes) where the part of blob %s (%d bytes) at byte %d was due: its other parts were lost", i, e.Blob, e.Size, p.d, p.size, p.next)
	case e.Offset != p.next:
		return blobError(p.d, "entry %d holds blob %s from byte %d where its part at byte %d was due: parts were lost or repeated", i, p.d, e.Offset, p.next)
	case uint64(len(e.Data)) > p.size-p.next:
		return blobError(p.d, "entry %d holds %d bytes of blob %s from byte %d, past its size %d", i, len(e.Data), p.d, p.next, p.size)
	case len(e.Data) == 0 && p.size != 0:
		return blobError(p.d, "entry %d holds no bytes of blob %s", i, p.d)
	}
	p.h.Write(e.Data)
	if p.keep {
		p.data = append(p.data, e.Data...)
	}
	p.next += uint64(len(e.Data))
	return nil
}

// complete reports whether every part of p was read.
func (p *blobParts) complete() bool { return p.next == p.size }

// check says whether p's bytes, whose last part is entry i, match its
// digest.
func (p *blobParts) check(i int) error {
	if got := events.Digest("sha256:" + hex.EncodeToString(p.h.Sum(nil))); got != p.d {
		return blobError(p.d, "entry %d ends blob %s, but its bytes (entries %d to %d) are %s: the blob was changed", i, p.d, p.first, i, got)
	}
	return nil
}

// blob is p read whole, its entries ending at byte end of the file.
func (p *blobParts) blob(end int64) ExportBlob {
	return ExportBlob{Digest: p.d, Size: int64(p.size), Data: p.data, Start: p.start, End: end}
}

// ReadExportBlob reads again the blob an export file holds between
// b.Start and b.End (as ReadExportWith found it), checking its bytes
// against b.Digest: a reader of a large file keeps where each blob is,
// not its bytes.
func ReadExportBlob(f io.ReaderAt, b ExportBlob) ([]byte, error) {
	dec := msgpack.NewDecoder(bufio.NewReader(io.NewSectionReader(f, b.Start, b.End-b.Start)))
	var p *blobParts
	for i := 1; ; i++ {
		var e exportItem
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("read blob %s again from the export: %w", b.Digest, err)
		}
		var err error
		if p == nil {
			p, err = startBlob(i, e, b.Start, true)
		} else {
			err = p.add(i, e)
		}
		if err == nil && p.d != b.Digest {
			err = blobError(b.Digest, "the export holds blob %s where blob %s was", p.d, b.Digest)
		}
		if err == nil && p.complete() {
			if err = p.check(i); err == nil {
				return p.data, nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("read blob %s again from the export (was the file changed?): %w", b.Digest, err)
		}
	}
}
