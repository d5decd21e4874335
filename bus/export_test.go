package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// LoadRunByScan loads a run with the filtered-scan fallback only, so that
// benchmarks can show what the run links save.
func (b *Bus) LoadRunByScan(ctx context.Context, suite, run string) (RunLog, error) {
	log := RunLog{Suite: suite, Run: run}
	err := b.directBatch(ctx, FactsStream, events.RunFilter(suite, run), 1, func(m *nats.Msg, _ uint64) { addMessage(&log, m) })
	return log, err
}

// LeaderLastSeq exposes the stream leader's answer to "where does this
// filter end", which reads trust over their replica's pending count.
func (b *Bus) LeaderLastSeq(ctx context.Context, stream, filter string) (uint64, error) {
	return b.leaderLastSeq(ctx, stream, filter)
}

// GetOnce is one attempt of Get, without its retries, so that a
// test can see one attempt's bound.
func (h *Blobs) GetOnce(ctx context.Context, d events.Digest) ([]byte, error) {
	b := h.b
	return b.getBlobOnce(ctx, d)
}

// HoldKeeping makes the next buses opened start their stream keeper only
// when release is closed, so that a test can restart the server before
// the keeper runs, as a busy machine may.
func HoldKeeping(release <-chan struct{}) (restore func()) {
	old := goKeep
	goKeep = func(f func()) { go func() { <-release; f() }() }
	return func() { goKeep = old }
}

// SetPrevDepth makes appended facts carry depth run links, until the
// returned function restores the default.
func SetPrevDepth(depth int) (restore func()) {
	old := prevDepth
	prevDepth = depth
	return func() { prevDepth = old }
}

// GetUnder reads the blob d under the object info read before between
// runs, as a reader does that raced a writer storing the name again.
func (h *Blobs) GetUnder(ctx context.Context, d events.Digest, between func()) ([]byte, error) {
	b := h.b
	info, err := b.blobInfo(ctx, d)
	if err != nil {
		return nil, err
	}
	between()
	return b.readBlob(ctx, d, info)
}

// PullOne exposes the bus's own on-demand pull.
func (b *Bus) PullOne(ctx context.Context, consumer string, expires time.Duration) (jetstream.Msg, error) {
	return b.pullOne(ctx, consumer, expires)
}

// PullBatch makes one of the bus's own pull-ahead pulls and reads it to
// its end, as the pull loop does: the messages it brought and why it
// ended (nil for a complete batch). When ctx ends first, or the server
// never ends it, the pull is withdrawn, and what it brought until then is
// returned with ctx's error or a timeout.
func (b *Bus) PullBatch(ctx context.Context, consumer string, n int, expires time.Duration) ([]jetstream.Msg, error) {
	p, err := b.pullBatch(consumer, n, expires)
	if err != nil {
		return nil, err
	}
	var got []jetstream.Msg
	for {
		select {
		case raw := <-p.arrivals():
			m, end, err := p.take(raw)
			if m != nil {
				got = append(got, m)
			}
			if end {
				p.finish()
				return got, err
			}
		case <-p.expired():
			return append(got, p.close()...), nats.ErrTimeout
		case <-ctx.Done():
			return append(got, p.close()...), ctx.Err()
		}
	}
}
