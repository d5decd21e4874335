package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConfigMismatchError reports an existing stream or bucket whose settings
// differ from what factline needs in a way that matters. factline never
// changes such a stream silently: an operator decides.
type ConfigMismatchError struct {
	Stream string
	Field  string
	Have   string
	Want   string
}

func (e *ConfigMismatchError) Error() string {
	if e.Field == "replicas" {
		return e.replicas()
	}
	return fmt.Sprintf("stream %s exists with %s = %s, factline needs %s (fix or remove the stream; factline will not change it silently)",
		e.Stream, e.Field, e.Have, e.Want)
}

// replicas says a replicas mismatch. The streams' replicas are a choice
// setup made, and the command's --replicas (bus.Config.Replicas) states
// which it expects: the usual mistake is the flag left out of one command
// line on a cluster, which the command fixes, not the stream (which holds
// the log). Streams with fewer replicas than asked may have been made by
// a command without the flag: only before any work may they be made anew.
func (e *ConfigMismatchError) replicas() string {
	msg := fmt.Sprintf("stream %s exists with replicas = %s, this command expects %s: give it --replicas %s (bus.Config.Replicas in Go), as the streams were set up",
		e.Stream, e.Have, e.Want, e.Have)
	have, herr := strconv.Atoi(e.Have)
	want, werr := strconv.Atoi(e.Want)
	if herr == nil && werr == nil && have < want {
		msg += fmt.Sprintf("; or, for %d replicas, before any work (the streams hold the log) remove them and run factline setup --replicas %d (docs/operations.md#running-on-a-cluster)", want, want)
	}
	return msg + "; factline never changes a stream's replicas"
}

func (b *Bus) streamConfigs() []jetstream.StreamConfig {
	return []jetstream.StreamConfig{
		{
			Name:        FactsStream,
			Description: "factline durable facts: the committed log",
			Subjects:    []string{"fact.>"},
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			Replicas:    b.cfg.Replicas,
			Duplicates:  b.cfg.DedupWindow,
			AllowDirect: true,
			// The log is append-only: the server refuses to delete or purge
			// its messages, for every identity, admin included. A stream
			// can still be removed whole (see docs/operations.md, retiring
			// suites). Once set, the server never lets these be unset.
			DenyDelete:  true,
			DenyPurge:   true,
			RePublish:   storedWakes(),
			Compression: factsCompression(b.cfg.CompressFacts),
			// A step's facts are committed as one batch, all or nothing
			// (AppendBatch).
			AllowAtomicPublish: true,
		},
		b.controlConfig(),
		{
			Name:        DeadStream,
			Description: "factline dead letters: messages a consumer could not use, with the reason",
			Subjects:    []string{deadPrefix + ".>"},
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Replicas:    b.cfg.Replicas,
			Duplicates:  b.cfg.DedupWindow,
			AllowDirect: true,
		},
	}
}

func (b *Bus) ensure(ctx context.Context) error {
	for _, want := range b.streamConfigs() {
		if err := b.ensureStream(ctx, want); err != nil {
			return err
		}
	}
	// Buckets are looked up before they are made, like streams: a service
	// whose identity may only read stream information (see docs/security.md)
	// opens a bus that an administrator set up, and an existing bucket is
	// never changed behind the operator's back.
	var err error
	b.blobs, err = openBucket(ctx, "object store "+BlobBucket,
		func(ctx context.Context) (jetstream.ObjectStore, error) { return b.js.ObjectStore(ctx, BlobBucket) },
		func(ctx context.Context) (jetstream.ObjectStore, error) {
			return b.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
				Bucket:      BlobBucket,
				Description: "factline blobs named by content digest",
				Storage:     jetstream.FileStorage,
				Replicas:    b.cfg.Replicas,
			})
		})
	if err != nil {
		return err
	}
	b.pos, err = b.openKV(ctx, PositionsBucket, "factline projection replay positions")
	if err != nil {
		return err
	}
	b.limits, err = openBucket(ctx, "kv "+LimitsBucket,
		func(ctx context.Context) (jetstream.KeyValue, error) { return b.js.KeyValue(ctx, LimitsBucket) },
		func(ctx context.Context) (jetstream.KeyValue, error) {
			return b.js.CreateKeyValue(ctx, b.limitsConfig())
		})
	return err
}

// openKV opens the key-value bucket name (openBucket), made when missing
// as the bus keeps its plain buckets: on file, on the bus's replicas,
// only the newest value of a key kept.
func (b *Bus) openKV(ctx context.Context, name, description string) (jetstream.KeyValue, error) {
	return openBucket(ctx, "kv "+name,
		func(ctx context.Context) (jetstream.KeyValue, error) { return b.js.KeyValue(ctx, name) },
		func(ctx context.Context) (jetstream.KeyValue, error) {
			return b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket:      name,
				Description: description,
				Storage:     jetstream.FileStorage,
				Replicas:    b.cfg.Replicas,
				History:     1,
			})
		})
}

// openBucket looks a bucket up and creates it only when it does not exist.
func openBucket[T any](ctx context.Context, what string, lookup, create func(context.Context) (T, error)) (T, error) {
	// Bounded: the response cache's bucket is opened on a run's first use,
	// and a lookup whose answer was lost would hold every run behind it.
	lctx, cancel := apiCtx(ctx)
	bucket, err := lookup(lctx)
	cancel()
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		cctx, cancel := context.WithTimeout(ctx, createTimeout)
		defer cancel()
		bucket, err = create(cctx)
		err = createErr(ctx, what, err)
	}
	if err != nil {
		return bucket, fmt.Errorf("%s: %w", what, err)
	}
	return bucket, nil
}

// ErrNotSetUp is returned by Open when a stream or bucket factline needs does
// not exist and this connection could not create it: typically a service
// identity that may not manage streams, on an account nobody has set up yet.
var ErrNotSetUp = errors.New("not set up: create the streams with an identity allowed to (factline setup)")

// createTimeout bounds one create: a server that refuses it never answers,
// and a caller with a long deadline must still learn why it cannot start.
var createTimeout = 20 * time.Second

// createErr explains a failed create. A server that refuses a request for
// want of permission does not answer it at all, so a create that timed out
// while the caller's own deadline still holds is most likely refused.
func createErr(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if unanswered(ctx, err) {
		return fmt.Errorf("%s is missing and creating it got no answer (%v): %w", what, err, ErrNotSetUp)
	}
	return err
}

// unanswered reports whether err is a request's own timeout while the
// caller's deadline still holds: the server said nothing at all, which a
// server refusing for want of permission, or unable to store, also does.
func unanswered(ctx context.Context, err error) bool {
	return ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout))
}

func (b *Bus) ensureStream(ctx context.Context, want jetstream.StreamConfig) error {
	s, err := b.js.Stream(ctx, want.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		cctx, cancel := context.WithTimeout(ctx, createTimeout)
		defer cancel()
		s, err := b.js.CreateStream(cctx, want)
		if err != nil {
			return fmt.Errorf("create stream %s: %w", want.Name, createErr(ctx, "stream "+want.Name, err))
		}
		if cluster := b.nc.ConnectedClusterName(); want.Name == FactsStream && want.Replicas == 1 && cluster != "" {
			// One replica is every command's default; on a cluster it
			// keeps the log on one node, lost with it, and no factline
			// command changes a stream's replicas after (mismatch refuses).
			// Said once, of the log: the other streams and buckets follow.
			b.log.Warn("made the log's stream with one replica on a cluster (the other streams and buckets too): its facts live on one node and are lost with it; for three, remove the streams before any work and make them with 'factline setup --nats URL --replicas 3', then give every command --replicas 3 (docs/operations.md#running-on-a-cluster)",
				"stream", want.Name, "replicas", want.Replicas, "cluster", cluster)
		}
		b.noteRePublish(want, want)
		// What the server kept: one that does not know a setting drops it.
		b.noteAtomic(s.CachedInfo().Config)
		return nil
	case err != nil:
		return fmt.Errorf("look up stream %s: %w", want.Name, err)
	}
	have := s.CachedInfo().Config
	b.noteRePublish(have, want)
	b.noteAtomic(have)
	if legacyControl(have, want) {
		b.log.Warn("CONTROL is kept in memory, as factline made it before: it is used as it is, and made again on file if a restart loses it (docs/operations.md)")
		return nil
	}
	if mm := mismatch(have, want); mm != nil {
		return mm
	}
	if na := notAppendOnly(have, want); na != nil {
		// Reported, not changed: adding the flags cannot be undone, so it
		// is the operator's step (factline setup --append-only).
		b.log.Warn("stream is not append-only", "stream", want.Name, "missing", na.Missing, "err", na)
	}
	return nil
}

// mismatch compares the settings that change what the log means. Others
// (descriptions, limits an operator tuned) are the operator's business.
func mismatch(have, want jetstream.StreamConfig) error {
	mk := func(field, h, w string) error {
		return &ConfigMismatchError{Stream: want.Name, Field: field, Have: h, Want: w}
	}
	hs, ws := slices.Sorted(slices.Values(have.Subjects)), slices.Sorted(slices.Values(want.Subjects))
	if !slices.Equal(hs, ws) {
		return mk("subjects", strings.Join(hs, ","), strings.Join(ws, ","))
	}
	if have.Storage != want.Storage {
		return mk("storage", have.Storage.String(), want.Storage.String())
	}
	if have.Retention != want.Retention {
		return mk("retention", have.Retention.String(), want.Retention.String())
	}
	if have.Replicas != want.Replicas {
		return mk("replicas", fmt.Sprint(have.Replicas), fmt.Sprint(want.Replicas))
	}
	if !have.AllowDirect && want.AllowDirect {
		return mk("allow_direct", "false", "true")
	}
	if want.Duplicates > 0 && have.Duplicates == 0 {
		return mk("duplicate_window", "0", want.Duplicates.String())
	}
	if want.DenyDelete {
		if field, h := dropsMessages(have); field != "" {
			return mk(field, h, "no limit (a limit that removes old messages loses acknowledged facts; deny_delete does not stop it)")
		}
	}
	return nil
}

// dropsMessages names the first limit of a stream that makes the server
// remove messages it acknowledged, and the limit's value: a max age or a
// per-subject count always does, a stream-wide count or size only with
// discard old (with discard new the server refuses the write instead, and
// factline reports a full store). It returns "" when none does.
func dropsMessages(c jetstream.StreamConfig) (field, value string) {
	switch {
	case c.MaxAge > 0:
		return "max_age", c.MaxAge.String()
	case c.MaxMsgsPerSubject > 0 && !c.DiscardNewPerSubject:
		return "max_msgs_per_subject", fmt.Sprint(c.MaxMsgsPerSubject)
	case c.MaxMsgs > 0 && c.Discard == jetstream.DiscardOld:
		return "max_msgs", fmt.Sprintf("%d with discard old", c.MaxMsgs)
	case c.MaxBytes > 0 && c.Discard == jetstream.DiscardOld:
		return "max_bytes", fmt.Sprintf("%d with discard old", c.MaxBytes)
	}
	return "", ""
}
