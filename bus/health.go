package bus

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/ops/metrics"
)

// ErrStoreFull says that JetStream refuses writes for want of space. The
// services hold their work, acknowledging nothing, until space is freed;
// docs/operations.md says how to recover.
var ErrStoreFull = errors.New("the NATS store is full")

// ErrNotStoring says that JetStream answers but stores nothing: a write
// went unacknowledged while the server answered a request that reads. A
// server whose disk filled before its own store limit does this (it logs
// "no space left on device" and leaves the stream that could not write
// storing nothing until it restarts); docs/operations.md#a-full-disk says
// how to recover.
var ErrNotStoring = errors.New("JetStream answers but stores nothing")

// ErrStreamMissing says that a stream factline needs does not exist and
// this connection may not create it (see docs/security.md: only the admin
// role manages streams).
var ErrStreamMissing = errors.New("a stream factline needs is missing")

// health is what a Bus has seen of the bus itself failing: the last write
// refused for want of space (until a write succeeds) and the streams it
// needs but found missing and could not create (until they exist again).
type health struct {
	mu        sync.Mutex
	storeFull error
	missing   map[string]error
	// unanswered is when a write first went unanswered with the
	// connection up, and lastUnanswered when one last did; both zero once
	// a write is acknowledged (or refused: an answer) again.
	unanswered, lastUnanswered time.Time
}

// unansweredFor is how long a write that went unanswered keeps Health
// failing when no write follows: a service whose last write timed out
// during an election and that has had nothing to write since must not
// stay unready for ever, and a stuck one retries (and times out) well
// within it.
const unansweredFor = 2 * time.Minute

// noteWrite records how a write to the store went: refused for want of
// space, or accepted (which clears a full store).
func (b *Bus) noteWrite(err error) { b.noteWriteLog(err, true) }

// noteWriteLog is noteWrite, logging the store filling up only if log is
// set (a probe's caller reports it itself).
func (b *Bus) noteWriteLog(err error, log bool) {
	b.noteAnswer(err)
	switch {
	case err == nil:
		b.health.mu.Lock()
		was := b.health.storeFull
		b.health.storeFull = nil
		b.health.mu.Unlock()
		if was != nil {
			metrics.StoreFull.WithLabelValues().Set(0)
			b.log.Info("the NATS store takes writes again")
		}
	case StoreFull(err):
		b.health.mu.Lock()
		was := b.health.storeFull
		b.health.storeFull = err
		b.health.mu.Unlock()
		metrics.StoreFull.WithLabelValues().Set(1)
		if was == nil && log {
			b.log.Error("the NATS store is full: work is held, nothing is acknowledged until space is freed (docs/operations.md#a-full-store)", "err", err)
		}
	}
}

// noteAnswer records whether a write was answered. One that timed out
// while the connection stayed up is what a link that died without a reset
// (noticed by the client's pings only minutes later) and a server that
// stores nothing (a full disk) look like; any answer, an error included,
// ends it. A write the caller gave up on (its context cancelled) says
// nothing either way.
func (b *Bus) noteAnswer(err error) {
	timedOut := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
	up := b.nc.IsConnected()
	if (timedOut && !up) || errors.Is(err, context.Canceled) {
		return // a connection down is Health's own case; a caller gave up
	}
	b.health.mu.Lock()
	defer b.health.mu.Unlock()
	switch {
	case !timedOut:
		if !b.health.unanswered.IsZero() {
			b.health.unanswered, b.health.lastUnanswered = time.Time{}, time.Time{}
			b.log.Info("writes are answered again")
		}
	default:
		now := time.Now()
		if b.health.unanswered.IsZero() || now.Sub(b.health.lastUnanswered) > unansweredFor {
			b.health.unanswered = now
			b.log.Warn("a write went unanswered with the connection up: work is held until writes are answered again", "err", err)
		}
		b.health.lastUnanswered = now
	}
}

// noteStream records whether a stream this Bus needs exists (err nil) or
// is missing and could not be created.
func (b *Bus) noteStream(stream string, err error) {
	b.health.mu.Lock()
	defer b.health.mu.Unlock()
	if err == nil {
		if _, was := b.health.missing[stream]; was {
			delete(b.health.missing, stream)
			metrics.StreamMissing.WithLabelValues(stream).Set(0)
			b.log.Info("stream is back", "stream", stream)
		}
		return
	}
	if b.health.missing == nil {
		b.health.missing = map[string]error{}
	}
	if _, was := b.health.missing[stream]; !was {
		b.log.Error("a stream factline needs is missing and this connection may not create it", "stream", stream, "err", err)
	}
	b.health.missing[stream] = err
	metrics.StreamMissing.WithLabelValues(stream).Set(1)
}

// Health reports what stops this Bus from doing its work now: no
// connection, a full store (ErrStoreFull) or a missing stream it may not
// create (ErrStreamMissing); nil when none. It reports what the Bus has
// seen, without asking the server: serve's /healthz answers with it.
func (b *Bus) Health() error {
	var errs []error
	if !b.nc.IsConnected() {
		errs = append(errs, errors.New("not connected to NATS"))
	}
	b.health.mu.Lock()
	if b.health.storeFull != nil {
		errs = append(errs, storeFullErr(b.health.storeFull))
	}
	if since := b.health.unanswered; !since.IsZero() && b.nc.IsConnected() && time.Since(b.health.lastUnanswered) <= unansweredFor {
		errs = append(errs, fmt.Errorf("writes go unanswered with the connection up, since %s (%s ago): a link that died without a reset, "+
			"a stream without a leader, or a server that stores nothing (a full disk: docs/operations.md#a-full-disk)",
			since.UTC().Format(time.RFC3339), time.Since(since).Round(time.Second)))
	}
	names := make([]string, 0, len(b.health.missing))
	for name := range b.health.missing {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		errs = append(errs, fmt.Errorf("%w: %s (%v)", ErrStreamMissing, name, b.health.missing[name]))
	}
	b.health.mu.Unlock()
	return errors.Join(errs...)
}

// probeSubject is where CheckWritable writes: a chunk subject of the blob
// bucket that no object names, so no reader ever sees it, and every role
// that stores blobs may publish it.
const probeSubject = "$O." + BlobBucket + ".C.factline-probe"

// probeSize is how many bytes a probe writes. A disk that fills leaves
// slack in the last page or block of every file already written, and a
// write that fits there is still taken: a 5-byte probe was acknowledged
// for ~45 s after a disk filled. A probe larger than any file system's
// block (64 KiB covers the largest page sizes Linux uses) needs space the
// disk no longer has. It is random, so that a compressing store cannot
// shrink it back into the slack.
const probeSize = 64 << 10

// CheckWritable writes a probe to the store, replacing the previous one
// (a subject rollup keeps one), and reports whether JetStream took it:
// ErrStoreFull when it refused it for want of space, ErrNotStoring when
// it left it unacknowledged but answered a read right after (a full disk:
// the server neither stores nor refuses). A suite's follower asks when
// nothing has happened for a while, since a full store shows only to a
// writer.
func (b *Bus) CheckWritable(ctx context.Context) error {
	data := make([]byte, probeSize)
	_, _ = rand.Read(data) // never fails (crypto/rand)
	m := &nats.Msg{Subject: probeSubject, Data: data, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	pctx, cancel := apiCtx(ctx)
	defer cancel()
	start := time.Now()
	_, err := b.js.PublishMsg(pctx, m)
	err = serverError(err)
	b.noteWriteLog(err, false)
	switch {
	case err == nil:
		return nil
	case StoreFull(err):
		return storeFullErr(err)
	case unanswered(ctx, err) && b.nc.IsConnected():
		// No answer at all: a server that is away answers nothing else
		// either; one that answers a read is up and not storing.
		actx, cancel := apiCtx(ctx)
		defer cancel()
		if _, aerr := b.js.AccountInfo(actx); aerr == nil {
			return fmt.Errorf("%w: a write went unacknowledged for %s while the server answered (a full disk does this: nats-server logs \"no space left on device\")",
				ErrNotStoring, time.Since(start).Round(time.Second))
		}
	}
	return fmt.Errorf("write probe: %w", err)
}

// storeFullErr says what JetStream answered to a write it refused for want
// of space, as an ErrStoreFull.
func storeFullErr(err error) error {
	if apiErr := asAPIError(err); apiErr != nil {
		return fmt.Errorf("%w (JetStream refused a write: %s, error %d)", ErrStoreFull, apiErr.Description, apiErr.ErrorCode)
	}
	return fmt.Errorf("%w: %v", ErrStoreFull, err)
}

// infraBackoff is how long a delivery whose work failed with the bus
// itself waits before it is tried again: 100 ms doubling to 5 s, so that
// an election is ridden out within a second and a full store is not
// hammered.
func infraBackoff(try int) time.Duration {
	return min(100*time.Millisecond<<min(try, 6), 5*time.Second)
}
