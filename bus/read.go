package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
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

// Fact decodes the message and checks it against the subject it was
// stored under (events.DecodeStored): every reader of raw messages turns
// them into facts this way, so that a fact forged under another kind's,
// suite's or run's subject counts for none of them. A mismatch is an
// error matching events.ErrSubjectMismatch.
func (r Raw) Fact() (events.Fact, error) { return events.DecodeStored(r.Subject, r.Data) }

// ReadOptions says what part of FACTS to read.
type ReadOptions struct {
	// Stream is the stream read (default FACTS; CONTROL holds control
	// signals and live status).
	Stream string
	// Filter selects subjects (default "fact.>" on FACTS, "ctl.>" and
	// "status.>" on CONTROL); Filters, when set, selects several.
	Filter  string
	Filters []string
	// FromSeq starts at this stream sequence (inclusive); FromTime at the
	// first message at or after this time. Neither means the beginning.
	FromSeq  uint64
	FromTime time.Time
	// Follow keeps reading new messages until ctx is done; otherwise the
	// read stops once it has caught up with the stream.
	Follow bool
	// Through, for a read that does not follow, is a sequence on the filter
	// the caller knows is committed (a delivered fact's): the read ends once
	// it has delivered it and nothing more is pending, without asking the
	// stream leader for its newest message.
	Through uint64
}

// readPrefetch is the ordered consumer's prefetch: replay is a bulk read.
const readPrefetch = 2048

// readStall is how long a read that expects more messages waits for the
// next one before it fails as stalled.
const readStall = 15 * time.Second

// orderedResets bounds how many times nats.go tries to recreate an ordered
// consumer that lost its server (a node killed, a reconnect) before the
// read fails for its caller to retry. nats.go retries under one consumer
// name, without end by default; the first try may be placed on the node
// that just died, before the cluster marks it offline, and every later
// try then updates that placement and waits on the dead node, so a
// follower waited until the node came back. A fresh read is a fresh name,
// placed among the nodes the cluster knows are up (at most ~35 s later:
// three tries of up to 10 s, 1 s and 2 s apart).
const orderedResets = 3

// Read delivers FACTS messages in stream order to fn through an ordered
// consumer. It returns the sequence of the last message delivered. An error
// from fn stops the read and is returned. A read that does not follow ends
// once it has delivered opts.Through, or else the newest message the stream
// leader holds on its filter (not only what the consumer's replica counts
// as pending); one that stops receiving before that fails after readStall,
// for its caller to retry.
func (b *Bus) Read(ctx context.Context, opts ReadOptions, fn func(Raw) error) (uint64, error) {
	stream := opts.Stream
	if stream == "" {
		stream = FactsStream
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{"fact.>"}, InactiveThreshold: orderedIdle, MaxResetAttempts: orderedResets}
	switch {
	case len(opts.Filters) > 0:
		cfg.FilterSubjects = opts.Filters
	case opts.Filter != "":
		cfg.FilterSubjects = []string{opts.Filter}
	case stream == ControlStream:
		cfg.FilterSubjects = []string{events.ControlPrefix + ".>", events.StatusPrefix + ".>"}
	}
	switch {
	case opts.FromSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, opts.FromSeq
	case !opts.FromTime.IsZero():
		t := opts.FromTime
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	actx, cancel := apiCtx(ctx)
	defer cancel()
	cons, err := b.js.OrderedConsumer(actx, stream, cfg)
	if err != nil {
		return 0, fmt.Errorf("read %v: %w", cfg.FilterSubjects, err)
	}
	defer b.dropOrdered(stream, cons)
	info, err := cons.Info(actx)
	if err != nil {
		return 0, fmt.Errorf("read %v: %w", cfg.FilterSubjects, err)
	}
	// target is the newest sequence a non-following read must reach
	// before it trusts "nothing pending" (see newestOn).
	target := opts.Through
	if info.NumPending == 0 && !opts.Follow && target > 0 && target < opts.FromSeq {
		return 0, nil // the caller has read through it already
	}
	if info.NumPending == 0 && !opts.Follow && target == 0 {
		if target, err = b.newestOn(ctx, stream, cfg.FilterSubjects, opts); err != nil || target == 0 {
			return 0, err
		}
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
		m, err := iter.Next(jetstream.NextMaxWait(readStall))
		if errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			if opts.Follow {
				continue // nothing new yet
			}
			// The stream said more was there; a read that stops getting it
			// (its consumer lost with a stream leader, or placed on a
			// replica that lags) fails and is retried by its caller rather
			// than waiting forever.
			return last, fmt.Errorf("read %v: no message for %s after sequence %d: %w: %w", cfg.FilterSubjects, readStall, last, ErrBehind, err)
		}
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
		if md.NumPending == 0 && !opts.Follow && last >= target {
			if opts.Through > 0 {
				return last, nil
			}
			newest, err := b.newestOn(ctx, stream, cfg.FilterSubjects, opts)
			if err != nil || newest <= last {
				return last, err
			}
			target = newest // more is there than the consumer counted
		}
	}
}

// newestOn returns the stream's newest sequence on filter at or after the
// read's start (0 when there is none). A read checks "nothing pending"
// against it before it ends: an ordered consumer is placed on any replica
// of the stream, and one placed on a replica that lags counts nothing
// pending while the leader holds more; a reader that trusted it would fold
// a partial log and wait for a message that never comes. The answer comes
// from the stream leader (the message-get API, which followers do not
// answer), not from a direct get, which a lagging follower may answer too.
func (b *Bus) newestOn(ctx context.Context, stream string, filters []string, opts ReadOptions) (uint64, error) {
	if !opts.FromTime.IsZero() {
		return 0, nil // where a time starts is the consumer's to say
	}
	var newest uint64
	for _, filter := range filters {
		n, err := b.leaderLastSeq(ctx, stream, filter)
		if err != nil {
			return 0, fmt.Errorf("read %s: check its end: %w", filter, err)
		}
		newest = max(newest, n)
	}
	if newest < opts.FromSeq {
		return 0, nil
	}
	return newest, nil
}

// msgGetReply is the part of the message-get API's answer a read needs.
type msgGetReply struct {
	Error *struct {
		Code    int    `json:"code"`
		ErrCode int    `json:"err_code"`
		Desc    string `json:"description"`
	} `json:"error"`
	Message *struct {
		Seq     uint64 `json:"seq"`
		Subject string `json:"subject"`
	} `json:"message"`
}

// errCodeNoMessage is JetStream's error code for "no message found".
const errCodeNoMessage = 10037

// leaderLastSeq asks the stream leader for the sequence of the newest
// message on filter (0 when there is none).
func (b *Bus) leaderLastSeq(ctx context.Context, stream, filter string) (uint64, error) {
	seq, _, err := b.leaderLast(ctx, stream, filter)
	return seq, err
}

// leaderLast asks the stream leader for the sequence and subject of the
// newest message on filter (0 and "" when there is none).
func (b *Bus) leaderLast(ctx context.Context, stream, filter string) (uint64, string, error) {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	req, _ := json.Marshal(struct {
		LastFor   string `json:"last_by_subj"`
		NoHeaders bool   `json:"no_hdr"`
	}{filter, true})
	m, err := b.nc.RequestWithContext(actx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return 0, "", fmt.Errorf("ask the %s leader for the newest on %s: %w", stream, filter, err)
	}
	var r msgGetReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return 0, "", fmt.Errorf("ask the %s leader for the newest on %s: bad answer: %w", stream, filter, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrCode == errCodeNoMessage:
		return 0, "", nil
	case r.Error != nil:
		// Kept typed: a 503 (JetStream unavailable for a moment, as
		// while a node rejoins) is the bus failing, not the work
		// (Transient).
		return 0, "", fmt.Errorf("ask the %s leader for the newest on %s: %w", stream, filter,
			&jetstream.APIError{Code: r.Error.Code, ErrorCode: jetstream.ErrorCode(r.Error.ErrCode), Description: r.Error.Desc})
	case r.Message == nil:
		return 0, "", fmt.Errorf("ask the %s leader for the newest on %s: answer holds no message", stream, filter)
	}
	return r.Message.Seq, r.Message.Subject, nil
}
