package bus

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// A small blob version (a turn's request delta, a first request) is stored
// inline: its stored form rides in its object's metadata message, and the
// object has no chunks. An object store put is two appends to the bucket's
// stream (chunk, then metadata) after two lookups of the name; a runner
// waits for its request's store before it commits the reply, so with
// fsync always each turn paid a second fsync and three more round trips.
// An inline version is one append, made on the condition that its name
// holds nothing yet, which keeps the first writer's bytes as a lookup did.
const (
	metaInline = "factline-inline"
	// inlineMax bounds the stored bytes that go inline: a metadata
	// message is read whole on every lookup of its name, so a large blob
	// keeps its chunks.
	inlineMax = 16 << 10
)

// emptyObjectDigest is the object store's digest of no bytes, which an
// inline object's (absent) chunks have.
var emptyObjectDigest = jetstream.GetObjectDigestValue(sha256.New())

// errNameTaken says an inline put found its name already stored.
var errNameTaken = errors.New("blob name already stored")

// putInline appends the metadata message of the object d holding stored
// inline, unless the name holds a message already (errNameTaken).
func (b *Bus) putInline(ctx context.Context, d events.Digest, meta jetstream.ObjectMeta, stored []byte) error {
	md := make(map[string]string, len(meta.Metadata)+1)
	for k, v := range meta.Metadata {
		md[k] = v
	}
	md[metaInline] = base64.StdEncoding.EncodeToString(stored)
	meta.Metadata = md
	// The object has no chunks; its chunk subject is named after the
	// digest only because an object needs one.
	info := jetstream.ObjectInfo{ObjectMeta: meta, Bucket: BlobBucket, NUID: d.Hex(), Digest: emptyObjectDigest}
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("put blob %s: %w", d, err)
	}
	m := nats.NewMsg("$O." + BlobBucket + ".M." + base64.URLEncoding.EncodeToString([]byte(meta.Name)))
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	m.Data = data
	pctx, cancel := apiCtx(ctx)
	defer cancel()
	if _, err := b.js.PublishMsg(pctx, m); err != nil {
		if isConflict(err) {
			return errNameTaken
		}
		return fmt.Errorf("put blob %s: %w", d, serverError(err))
	}
	return nil
}

// isInline says whether an object holds its stored form in its metadata.
func isInline(info *jetstream.ObjectInfo) bool {
	_, ok := info.Metadata[metaInline]
	return ok
}

// inlineBytes returns the stored form an inline object holds.
func inlineBytes(d events.Digest, info *jetstream.ObjectInfo) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(info.Metadata[metaInline])
	if err != nil {
		return nil, fmt.Errorf("get blob %s: its inline bytes: %v: %w", d, err, ErrBlobCorrupt)
	}
	return raw, nil
}
