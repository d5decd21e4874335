package bus

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
)

// The headers of JetStream's atomic batch publish (nats-server 2.12 and
// later): every member names the batch and its place in it, and the last
// one commits the batch. nats.go has no API for it.
const (
	headerBatchID     = "Nats-Batch-Id"
	headerBatchSeq    = "Nats-Batch-Sequence"
	headerBatchCommit = "Nats-Batch-Commit"
)

// The server's error codes an atomic batch can get besides a conflict.
const (
	errCodeAtomicDisabled   = 10174 // the stream does not allow atomic publish
	errCodeAtomicIncomplete = 10176 // a member was lost, or the batch aged out (a restart)
	errCodeAtomicDuplicate  = 10201 // a member's message ID is stored already
	errCodeAtomicInflight   = 10210 // too many batches staged on the stream at once
	errCodeDuplicateNoSeq   = 10158 // a duplicate whose original is not stored yet
)

// AtomicBatches reports whether this bus commits the facts of one append
// as one atomic batch (see AppendBatch): FACTS, as the bus found it when it
// opened or last looked, allows atomic publish and is replicated.
func (b *Bus) AtomicBatches() bool { return b.atomic.Load() }

// noteAtomic records whether appends to FACTS, as it exists, go as atomic
// batches. A stream made before factline asked for them does not take
// them, and an older server drops the setting it does not know: both leave
// the bus appending one fact at a time.
//
// Nor does a stream of one replica on file, where a batch costs more than
// the round trips it saves: nats-server stages each such batch in a file
// store of its own, made, fsynced and removed per batch, even with fsync
// interval. Measured here (BenchmarkAppendPair, two facts of one run, under
// load), a batch took 5 times as long as two sequential appends with fsync
// always and 40 times with interval; on three replicas, which stage a batch
// in memory and replicate it as one proposal, a batch took half as long
// (docs/subjects.md, atomic batches).
func (b *Bus) noteAtomic(have jetstream.StreamConfig) {
	if have.Name == FactsStream {
		b.atomic.Store(have.AllowAtomicPublish && (have.Replicas > 1 || have.Storage == jetstream.MemoryStorage || b.cfg.AtomicBatchesOnOneReplica))
	}
}

// AllowAtomicBatches turns on atomic batch publish on a FACTS stream made
// before factline used it, as factline setup does; it reports whether it
// changed the stream. A server that does not know the setting leaves it
// off, and appends stay one at a time. Buses already open keep appending
// one at a time until they are opened again.
func (b *Bus) AllowAtomicBatches(ctx context.Context) (bool, error) {
	changed, err := b.editFacts(ctx, "allow atomic batches", func(cfg *jetstream.StreamConfig) (bool, error) {
		if cfg.AllowAtomicPublish {
			return false, nil
		}
		cfg.AllowAtomicPublish = true
		return true, nil
	})
	if err != nil {
		return false, err
	}
	cfg, err := b.storedFactsConfig(ctx)
	if err != nil {
		return changed, err
	}
	if !cfg.AllowAtomicPublish {
		return false, fmt.Errorf("stream %s: the server kept allow_atomic off (nats-server 2.12 or later takes it): appends stay one fact at a time", FactsStream)
	}
	b.noteAtomic(cfg)
	return changed, nil
}

// AppendBatch commits facts of one run as Append does, but all or nothing
// and in one round trip: the facts are one JetStream atomic batch, the
// first carrying the run-wide expected last sequence (the same optimistic
// concurrency as Append), each carrying its message ID. Another writer
// that got there first fails the whole batch with a *ConflictError and
// nothing of it is stored; a retry of a batch that landed (its answer was
// lost) is refused as holding stored message IDs and returns the stored
// records marked Duplicate.
//
// The members of a batch are stored at consecutive stream sequences, so a
// member after the first links to the run's earlier messages by its
// distance back from its own sequence (see HeaderPrev), which is known
// before the batch is stored.
//
// Where a batch cannot be used (one fact, a stream that does not allow
// atomic publish, a server that refuses the batch before storing any of
// it) it appends the facts one at a time with Append.
func (b *Bus) AppendBatch(ctx context.Context, expect Expect, facts ...Pending) ([]Record, error) {
	if len(facts) < 2 || !b.atomic.Load() {
		return b.Append(ctx, expect, facts...)
	}
	suite, run := facts[0].Fact.Suite, facts[0].Fact.Run
	msgs := make([]*nats.Msg, len(facts))
	ids := make([]string, len(facts))
	batch := rand.Text() // unique per try: a retry is a new batch
	for i, p := range facts {
		m, key, err := b.message(i, p, expect, suite, run)
		if err != nil {
			return nil, err
		}
		m.Header.Set(nats.MsgIdHdr, key)
		m.Header.Set(headerBatchID, batch)
		m.Header.Set(headerBatchSeq, strconv.Itoa(i+1))
		if i == 0 {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect.Last, 10))
			m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, events.RunFilter(suite, run))
		} else {
			m.Header.Set(HeaderPrev, inBatchLinks(i))
		}
		msgs[i], ids[i] = m, key
	}
	msgs[len(msgs)-1].Header.Set(headerBatchCommit, "1")

	t0 := time.Now()
	ack, err := b.publishBatch(ctx, msgs)
	metrics.AppendSeconds.WithLabelValues().Observe(time.Since(t0).Seconds())
	b.noteWrite(err)
	var api *jetstream.APIError
	switch {
	case err == nil:
	case isConflict(err):
		metrics.AppendConflicts.WithLabelValues().Inc()
		return nil, b.appendError(suite, run, expect.Last, nil, err)
	case errors.As(err, &api) && (api.ErrorCode == errCodeAtomicDuplicate || api.ErrorCode == errCodeDuplicateNoSeq):
		// A retry of a batch that landed, or a member committed before
		// (a fallback that stopped half way): the log says which.
		if done, ok := b.recognise(ctx, suite, run, facts); ok {
			return done, nil
		}
		return nil, &ConflictError{Suite: suite, Run: run, Expected: expect.Last, Err: err}
	case errors.As(err, &api) && api.ErrorCode == errCodeAtomicDisabled:
		// The stream was changed under the bus, or a server of the
		// cluster does not take batches: nothing was stored.
		b.log.Warn("FACTS refused an atomic batch; appending one fact at a time", "err", err)
		b.atomic.Store(false)
		return b.Append(ctx, expect, facts...)
	case errors.As(err, &api) && (api.ErrorCode == errCodeAtomicIncomplete || api.ErrorCode == errCodeAtomicInflight):
		// Refused whole before any of it was stored (a member lost in a
		// reconnect, a restart between the members and the commit, the
		// server's limit of staged batches): the facts go one at a time,
		// under the same expectation.
		b.log.Debug("atomic batch refused; appending one at a time", "suite", suite, "run", run, "err", err)
		return b.Append(ctx, expect, facts...)
	default:
		return nil, fmt.Errorf("append batch to %s/%s: %w", suite, run, err)
	}
	if ack.Count != uint64(len(msgs)) || ack.Seq < ack.Count {
		return nil, fmt.Errorf("append batch to %s/%s: the server stored %d of %d facts ending at sequence %d", suite, run, ack.Count, len(msgs), ack.Seq)
	}
	out := make([]Record, len(facts))
	first := ack.Seq - ack.Count + 1
	for i, p := range facts {
		out[i] = Record{Fact: p.Fact, Seq: first + uint64(i), Subject: msgs[i].Subject, MsgID: ids[i]}
		metrics.FactsAppended.WithLabelValues(string(p.Fact.Kind())).Inc()
	}
	return out, nil
}

// batchAck is the server's answer to a batch's commit.
type batchAck struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Batch  string `json:"batch"`
	Count  uint64 `json:"count"`
	Error  *struct {
		Code        int    `json:"code"`
		ErrorCode   int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// publishBatch sends the members of a batch without waiting (the server
// answers only the commit, the last one) and waits for the commit's answer.
func (b *Bus) publishBatch(ctx context.Context, msgs []*nats.Msg) (batchAck, error) {
	for _, m := range msgs[:len(msgs)-1] {
		if err := b.nc.PublishMsg(m); err != nil {
			return batchAck{}, err
		}
	}
	// Bounded: a commit's answer lost with a stream leader never comes,
	// and the retry recognises a batch that did land by its IDs.
	rctx, cancel := apiCtx(ctx)
	defer cancel()
	resp, err := b.nc.RequestMsgWithContext(rctx, msgs[len(msgs)-1])
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return batchAck{}, fmt.Errorf("no stream answers %s: %w", msgs[0].Subject, err)
		}
		return batchAck{}, err
	}
	var ack batchAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return batchAck{}, fmt.Errorf("the commit's answer %q: %w", resp.Data, err)
	}
	if ack.Error != nil {
		return batchAck{}, &jetstream.APIError{Code: ack.Error.Code, ErrorCode: jetstream.ErrorCode(ack.Error.ErrorCode), Description: ack.Error.Description}
	}
	return ack, nil
}
