package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// An object store put publishes its chunks, then its metadata message,
// without waiting for either; when an acknowledgement reports an error (a
// connection dropped mid-put) it purges the chunk subject. The metadata
// message may already be stored by then, and the name is left with
// metadata whose chunks are gone (chaos seed 2006). Such a name is not a
// stored blob: a put stores it again (the object store replaces a name's
// metadata), and a read fails at once with ErrBlobIncomplete instead of
// waiting for chunks that never come.

// ErrBlobIncomplete is returned when a blob's name is stored but the
// chunks its metadata counts are not: a put that lost its answer left the
// name behind. It matches ErrBlobNotFound too (errors.Is): the bytes are
// not in the store, and only a put of them mends it.
var ErrBlobIncomplete = fmt.Errorf("%w: its chunks are missing (a put that lost its answer left its name)", ErrBlobNotFound)

// blobStream is the stream that holds the BLOBS object store.
const blobStream = "OBJ_" + BlobBucket

// chunkSubject is the subject an object's chunks are stored on.
func chunkSubject(info *jetstream.ObjectInfo) string {
	return "$O." + BlobBucket + ".C." + info.NUID
}

// storedWhole says whether the object info describes holds all its
// chunks. An inline object (blobinline.go) and an empty one have none to
// miss. The count comes from the stream's leader, so "fewer" is a
// definitive answer, not a lagging replica's; an error asking is returned
// as it is (Transient during a leader change), never as "incomplete".
func (b *Bus) storedWhole(ctx context.Context, info *jetstream.ObjectInfo) (have uint64, whole bool, err error) {
	if isInline(info) || info.Chunks == 0 {
		return 0, true, nil
	}
	n, err := b.subjectCount(ctx, blobStream, chunkSubject(info))
	if err != nil {
		return 0, false, err
	}
	return n, n >= uint64(info.Chunks), nil
}

// checkWhole returns nil when the object info describes for d holds all
// its chunks, and ErrBlobIncomplete when it does not and its name still
// names that object. A name stored again meanwhile (a put mending it, or
// two writers racing: the second purges the first one's chunks once its
// own are stored) is a read to try again, not a broken blob.
func (b *Bus) checkWhole(ctx context.Context, d events.Digest, info *jetstream.ObjectInfo) error {
	have, whole, err := b.storedWhole(ctx, info)
	if err != nil {
		return fmt.Errorf("get blob %s: count its chunks: %w", d, err)
	}
	if whole {
		return nil
	}
	now, err := b.blobInfo(ctx, d)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return fmt.Errorf("get blob %s: %w", d, ErrBlobNotFound)
	case err != nil:
		return fmt.Errorf("get blob %s: %w", d, err)
	case now.NUID != info.NUID:
		return fmt.Errorf("get blob %s: %w", d, errStoredAgain)
	}
	return fmt.Errorf("get blob %s: %d of its %d chunks (%d bytes) on %s: %w",
		d, have, info.Chunks, info.Size, chunkSubject(info), ErrBlobIncomplete)
}

// errStoredAgain says a blob's name was stored again while it was read;
// Get reads it again.
var errStoredAgain = errors.New("its name was stored again while it was read")

// alreadyStored says whether a put of d may stop at the name it finds:
// only when the name holds a whole object. A name whose chunks are gone
// (see above) is put again. An error is a lookup that failed.
func (b *Bus) alreadyStored(ctx context.Context, d events.Digest) (*jetstream.ObjectInfo, bool, error) {
	info, err := b.blobInfo(ctx, d)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("put blob %s: %w", d, err)
	}
	have, whole, err := b.storedWhole(ctx, info)
	if err != nil {
		return nil, false, fmt.Errorf("put blob %s: count its chunks: %w", d, err)
	}
	if !whole {
		b.log.Warn("blob name stored without its chunks; storing it again", "digest", d, "chunks", info.Chunks, "found", have)
		return nil, false, nil
	}
	return info, true, nil
}

// subjectCount asks stream's leader how many messages it holds on the
// literal subject subj: one stream info request filtered to that subject.
func (b *Bus) subjectCount(ctx context.Context, stream, subj string) (uint64, error) {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	req, _ := json.Marshal(struct {
		Filter string `json:"subjects_filter"`
	}{subj})
	m, err := b.nc.RequestWithContext(actx, "$JS.API.STREAM.INFO."+stream, req)
	if err != nil {
		return 0, fmt.Errorf("ask the %s leader how many messages %s holds: %w", stream, subj, err)
	}
	var r struct {
		Error *struct {
			Code    int    `json:"code"`
			ErrCode int    `json:"err_code"`
			Desc    string `json:"description"`
		} `json:"error"`
		State *struct {
			Subjects map[string]uint64 `json:"subjects"`
		} `json:"state"`
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return 0, fmt.Errorf("ask the %s leader how many messages %s holds: bad answer: %w", stream, subj, err)
	}
	switch {
	case r.Error != nil:
		// Kept typed, as leaderLastSeq keeps it: a 503 while a leader is
		// elected is Transient.
		return 0, fmt.Errorf("ask the %s leader how many messages %s holds: %w", stream, subj,
			&jetstream.APIError{Code: r.Error.Code, ErrorCode: jetstream.ErrorCode(r.Error.ErrCode), Description: r.Error.Desc})
	case r.State == nil:
		return 0, fmt.Errorf("ask the %s leader how many messages %s holds: answer holds no state", stream, subj)
	}
	return r.State.Subjects[subj], nil
}
