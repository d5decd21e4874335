package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Raw is one stored message of FACTS, not yet decoded: replays decode it
// themselves so that one bad message is reported, not fatal.
type Raw struct {
	Seq     uint64
	Subject string
	MsgID   string
	Time    time.Time
	Data    []byte
}

// ReadOptions says what part of FACTS to read.
type ReadOptions struct {
	// Filter selects subjects (default "fact.>").
	Filter string
	// FromSeq starts at this stream sequence (inclusive); FromTime at the
	// first message at or after this time. Neither means the beginning.
	FromSeq  uint64
	FromTime time.Time
	// Follow keeps reading new messages until ctx is done; otherwise the
	// read stops once it has caught up with the stream.
	Follow bool
}

// dropOrdered deletes an ordered consumer's server-side consumer once the
// caller is done with it. Stopping the client's iterator leaves it on the
// server until its inactivity threshold (5 minutes) passes, and a stream
// allows 1,000 consumers by default: a service reading or watching once per
// run would otherwise be refused new consumers after 1,000 runs in five
// minutes.
func (b *Bus) dropOrdered(stream string, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.js.DeleteConsumer(ctx, stream, info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		b.log.Debug("could not delete a finished ordered consumer; the server drops it when idle", "stream", stream, "consumer", info.Name, "err", err)
	}
}

// readBatch is the ordered consumer's prefetch: replay is a bulk read.
const readPrefetch = 2048

// Read delivers FACTS messages in stream order to fn through an ordered
// consumer. It returns the sequence of the last message delivered. An error
// from fn stops the read and is returned.
func (b *Bus) Read(ctx context.Context, opts ReadOptions, fn func(Raw) error) (uint64, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{"fact.>"}}
	if opts.Filter != "" {
		cfg.FilterSubjects = []string{opts.Filter}
	}
	switch {
	case opts.FromSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, opts.FromSeq
	case !opts.FromTime.IsZero():
		t := opts.FromTime
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := b.js.OrderedConsumer(ctx, FactsStream, cfg)
	if err != nil {
		return 0, fmt.Errorf("read %v: %w", cfg.FilterSubjects, err)
	}
	defer b.dropOrdered(FactsStream, cons)
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read %v: %w", cfg.FilterSubjects, err)
	}
	if info.NumPending == 0 && !opts.Follow {
		return 0, nil
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(readPrefetch))
	if err != nil {
		return 0, fmt.Errorf("read %v: %w", cfg.FilterSubjects, err)
	}
	defer iter.Stop()
	stop := context.AfterFunc(ctx, iter.Stop)
	defer stop()
	var last uint64
	for {
		m, err := iter.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) && ctx.Err() != nil {
				return last, ctx.Err()
			}
			return last, fmt.Errorf("read %v: %w", cfg.FilterSubjects, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return last, fmt.Errorf("read: %w", err)
		}
		last = md.Sequence.Stream
		if err := fn(Raw{Seq: last, Subject: m.Subject(), MsgID: m.Headers().Get(jetstream.MsgIDHeader), Time: md.Timestamp, Data: m.Data()}); err != nil {
			return last, err
		}
		if md.NumPending == 0 && !opts.Follow {
			return last, nil
		}
	}
}
