package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
	"github.com/factline/factline/ops/metrics"
)

// ErrConflict matches a *ConflictError with errors.Is.
var ErrConflict = errors.New("append conflict: the run moved on")

// ConflictError says another writer appended to the run first. The caller
// reloads the run: if its fact is already there it is done (a redelivery),
// otherwise it decides again.
type ConflictError struct {
	Suite, Run string
	Expected   uint64   // the last sequence the writer believed in
	Committed  []Record // facts of this append that landed before the conflict
	Err        error    // the server's answer
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("append to %s/%s expecting last sequence %d: %v", e.Suite, e.Run, e.Expected, e.Err)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the server's error.
func (e *ConflictError) Unwrap() error { return e.Err }

// Pending is a fact on its way to the log with its deduplication ID. A
// derived fact uses a deterministic ID ("<run>/<turn>/stall") so that a
// redelivered input cannot commit it twice; an empty MsgID uses the fact ID.
type Pending struct {
	Fact  events.Fact
	MsgID string
}

// Record is a committed fact and where it sits in the stream.
type Record struct {
	Fact    events.Fact
	Seq     uint64 // stream sequence
	Subject string
	// MsgID is the deduplication ID as the stream holds it (see
	// scopeMsgID): for facts appended since IDs are hashed, 22 characters
	// that only HasMsgID can match to the writer's ID; for facts of older
	// stores, the writer's own ID.
	MsgID string
	// Duplicate is true when the server already held a message with this
	// MsgID and returned the original's sequence instead of storing again.
	Duplicate bool
}

// Append commits facts of one run in order, each on the condition that the
// run's last stream sequence is what the writer expects: expect.Last for the
// first fact (0 for an empty run), then the sequence of the previous one. If
// another writer got there first it returns a *ConflictError holding the
// facts of this call that did land. A retried append whose facts are all
// committed already (found by message ID) succeeds with records marked
// Duplicate.
func (b *Bus) Append(ctx context.Context, expect Expect, facts ...Pending) ([]Record, error) {
	if len(facts) == 0 {
		return nil, nil
	}
	suite, run := facts[0].Fact.Suite, facts[0].Fact.Run
	out := make([]Record, 0, len(facts))
	for i, p := range facts {
		msg, key, err := b.message(i, p, expect, suite, run)
		if err != nil {
			return out, err
		}
		t0 := time.Now()
		// Bounded: an acknowledgement lost with a stream leader never
		// comes, and the retry recognises a fact that did land by its ID.
		pctx, cancel := apiCtx(ctx)
		ack, err := b.js.PublishMsg(pctx, msg,
			jetstream.WithExpectLastSequenceForSubject(expect.Last, events.RunFilter(suite, run)),
			jetstream.WithMsgID(key))
		cancel()
		err = serverError(err)
		metrics.AppendSeconds.WithLabelValues().Observe(time.Since(t0).Seconds())
		b.noteWrite(err)
		if err != nil {
			if isConflict(err) {
				metrics.AppendConflicts.WithLabelValues().Inc()
				if done, ok := b.recognise(ctx, suite, run, facts[i:]); ok {
					return append(out, done...), nil
				}
			}
			return out, b.appendError(suite, run, expect.Last, out, err)
		}
		out = append(out, Record{Fact: p.Fact, Seq: ack.Sequence, Subject: msg.Subject, MsgID: key, Duplicate: ack.Duplicate})
		if !ack.Duplicate {
			// A duplicate left the run where it was.
			expect = expect.then(ack.Sequence)
			metrics.FactsAppended.WithLabelValues(string(p.Fact.Kind())).Inc()
		}
	}
	return out, nil
}

// message validates and encodes fact i of an append to suite/run,
// linking it to the run's earlier messages (see HeaderPrev), and returns
// it with its message ID as stored (scopeMsgID). A fact of another run is
// refused: an append is conditional on one run's last sequence.
func (b *Bus) message(i int, p Pending, expect Expect, suite, run string) (*nats.Msg, string, error) {
	if p.Fact.Suite != suite || p.Fact.Run != run {
		return nil, "", fmt.Errorf("append: fact %d belongs to %s/%s, not %s/%s", i, p.Fact.Suite, p.Fact.Run, suite, run)
	}
	if err := p.Fact.Validate(); err != nil {
		return nil, "", fmt.Errorf("append: %w", err)
	}
	subj, err := p.Fact.Subject()
	if err != nil {
		return nil, "", fmt.Errorf("append: %w", err)
	}
	// On its subject, the fact need not carry its suite and run: the
	// subject names them (envelope version 4).
	data, err := events.EncodeStored(p.Fact)
	if err != nil {
		return nil, "", fmt.Errorf("append: %w", err)
	}
	id := p.MsgID
	if id == "" {
		id = p.Fact.ID.String()
	}
	m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	if h := expect.header(); h != "" {
		m.Header.Set(HeaderPrev, h)
	}
	return m, scopeMsgID(suite, id), nil
}

// recognise handles a conflict that may be a retry of an append that
// already landed (its ack was lost): a standalone server checks the expected
// sequence before it deduplicates, so such a retry reports a conflict. If
// the run already holds every remaining fact (by message ID), the append is
// done and their committed records are returned.
func (b *Bus) recognise(ctx context.Context, suite, run string, rest []Pending) ([]Record, bool) {
	log, err := b.LoadRun(ctx, suite, run)
	if err != nil {
		return nil, false
	}
	done, left := splitCommitted(log, rest)
	return done, len(left) == 0
}

func (b *Bus) appendError(suite, run string, expect uint64, committed []Record, err error) error {
	if isConflict(err) {
		return &ConflictError{Suite: suite, Run: run, Expected: expect, Committed: committed, Err: err}
	}
	return fmt.Errorf("append to %s/%s: %w", suite, run, err)
}

func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// A standalone server and a clustered one report a failed
		// expected-last-sequence check with different codes: both are a
		// conflict. So is another writer's append of the same message
		// still being replicated ("duplicate message id is in process",
		// a cluster's answer while the first is proposed): once it lands
		// the run has moved on, and the reload finds the fact there (two
		// graders given two facts of one run both commit its verdict).
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant ||
			apiErr.ErrorCode == errCodeDuplicateNoSeq
	}
	return false
}

// AsyncAppend is an append in flight; see AppendAsync.
type AsyncAppend struct {
	fut        jetstream.PubAckFuture
	p          Pending
	id         string // as stored (scopeMsgID)
	suite, run string
	expect     uint64
}

// AppendAsync starts a conditional append of one fact without waiting for
// the server, so that appends to many runs can be pipelined. Wait for the
// result before appending the run's next fact: its expected sequence is this
// one's result.
func (b *Bus) AppendAsync(expect Expect, p Pending) (*AsyncAppend, error) {
	suite, run := p.Fact.Suite, p.Fact.Run
	msg, key, err := b.message(0, p, expect, suite, run)
	if err != nil {
		return nil, err
	}
	fut, err := b.js.PublishMsgAsync(msg,
		jetstream.WithExpectLastSequenceForSubject(expect.Last, events.RunFilter(suite, run)),
		jetstream.WithMsgID(key))
	if err != nil {
		return nil, fmt.Errorf("append to %s/%s: %w", suite, run, err)
	}
	return &AsyncAppend{fut: fut, p: p, id: key, suite: suite, run: run, expect: expect.Last}, nil
}

// Wait returns the committed record or the append's error (a
// *ConflictError when another writer got there first). Pass
// expect.Then(record.Seq) as the expectation of the run's next append.
func (a *AsyncAppend) Wait(ctx context.Context) (Record, error) {
	select {
	case ack := <-a.fut.Ok():
		if !ack.Duplicate {
			metrics.FactsAppended.WithLabelValues(string(a.p.Fact.Kind())).Inc()
		}
		return Record{Fact: a.p.Fact, Seq: ack.Sequence, Subject: a.fut.Msg().Subject, MsgID: a.id, Duplicate: ack.Duplicate}, nil
	case err := <-a.fut.Err():
		err = serverError(err)
		if isConflict(err) {
			metrics.AppendConflicts.WithLabelValues().Inc()
			return Record{}, &ConflictError{Suite: a.suite, Run: a.run, Expected: a.expect, Err: err}
		}
		return Record{}, fmt.Errorf("append to %s/%s: %w", a.suite, a.run, err)
	case <-ctx.Done():
		return Record{}, fmt.Errorf("append to %s/%s: %w", a.suite, a.run, ctx.Err())
	}
}

// zeroAppendCounters exports the count of every kind of fact appended at 0,
// so that rates and increases over them (FactlineStuckRuns) see the first
// fact of a kind, and an absent kind reads as none rather than as no data;
// likewise the conflicts (FactlineAppendConflictStorm) and the append
// latency's count.
func zeroAppendCounters() {
	for _, k := range events.Kinds() {
		metrics.FactsAppended.WithLabelValues(string(k)).Add(0)
	}
	metrics.AppendConflicts.WithLabelValues().Add(0)
	metrics.AppendSeconds.WithLabelValues()
}
