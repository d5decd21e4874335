package bus

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers a dead letter carries besides the original payload.
const (
	HeaderDeadReason     = "Factline-Reason"
	HeaderDeadSubject    = "Factline-Original-Subject"
	HeaderDeadSeq        = "Factline-Original-Seq"
	HeaderDeadStream     = "Factline-Original-Stream"
	HeaderDeadConsumer   = "Factline-Consumer"
	HeaderDeadDeliveries = "Factline-Deliveries"
)

// DeadLetter is a message a consumer could not use, kept with the reason.
type DeadLetter struct {
	Seq        uint64 // sequence in the DEAD stream
	Reason     string
	Subject    string // original subject
	Stream     string // original stream
	StreamSeq  uint64 // original sequence
	Consumer   string
	Deliveries uint64
	Data       []byte // original payload, untouched
}

// DeadSubject returns dead.<stream>.<consumer>, where a consumer's dead
// letters go.
func DeadSubject(stream, consumer string) string {
	return deadPrefix + "." + stream + "." + consumer
}

// deadLetter stores a message in DEAD with the reason, synchronously, so
// that the original is acknowledged only once its copy is safe.
func (b *Bus) deadLetter(ctx context.Context, stream, consumer string, subject string, seq, deliveries uint64, data []byte, reason string) error {
	m := &nats.Msg{Subject: DeadSubject(stream, consumer), Data: data, Header: nats.Header{}}
	m.Header.Set(HeaderDeadReason, reason)
	m.Header.Set(HeaderDeadSubject, subject)
	m.Header.Set(HeaderDeadStream, stream)
	m.Header.Set(HeaderDeadSeq, strconv.FormatUint(seq, 10))
	m.Header.Set(HeaderDeadConsumer, consumer)
	m.Header.Set(HeaderDeadDeliveries, strconv.FormatUint(deliveries, 10))
	id := fmt.Sprintf("%s/%d/%s", stream, seq, consumer)
	pctx, cancel := apiCtx(ctx)
	defer cancel()
	_, err := b.js.PublishMsg(pctx, m, jetstream.WithMsgID(id))
	err = serverError(err)
	b.noteWrite(err)
	if err != nil {
		return fmt.Errorf("dead-letter %s seq %d: %w", subject, seq, err)
	}
	b.log.Warn("dead-lettered message", "consumer", consumer, "subject", subject, "seq", seq, "reason", reason)
	return nil
}

// DeadLetters reads the dead letters of one consumer ("" for all), oldest
// first.
func (b *Bus) DeadLetters(ctx context.Context, consumer string) ([]DeadLetter, error) {
	filter := deadPrefix + ".>"
	if consumer != "" {
		filter = deadPrefix + ".*." + consumer
	}
	var out []DeadLetter
	err := b.directBatch(ctx, DeadStream, filter, 1, func(m *nats.Msg, seq uint64) {
		h := m.Header
		oseq, _ := strconv.ParseUint(h.Get(HeaderDeadSeq), 10, 64)
		del, _ := strconv.ParseUint(h.Get(HeaderDeadDeliveries), 10, 64)
		out = append(out, DeadLetter{
			Seq: seq, Reason: h.Get(HeaderDeadReason), Subject: h.Get(HeaderDeadSubject),
			Stream: h.Get(HeaderDeadStream), StreamSeq: oseq, Consumer: h.Get(HeaderDeadConsumer),
			Deliveries: del, Data: m.Data,
		})
	})
	return out, err
}
