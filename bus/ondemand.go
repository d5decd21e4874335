package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pullOne asks an on-demand consumer for one message, which the server
// sends within expires or answers 408, on an inbox of its own that it
// unsubscribes before it returns. nats.go's Next unsubscribes its inbox
// from a goroutine of the client a moment after it returns, which nothing
// can wait for: a nak sent in that moment (the hand-back of a run stopped
// at shutdown) could reach the server first and be delivered into the
// ending pull, to be lost with the process and come back only after the
// ack wait. Here the unsubscribe is written to the connection, the one
// every ack goes out on, before pullOne returns, so the server has
// withdrawn the pull before it reads any nak sent after (handBackStopped).
//
// It returns the message; nats.ErrTimeout when none came; nats.ErrNoResponders
// when no server answers for the consumer; ctx's error when ctx ends; or
// the server's refusal (409 …). A message the server sends after pullOne
// gave up is never read, as with Next: it waits out its ack wait.
func (b *Bus) pullOne(ctx context.Context, consumer string, expires time.Duration) (jetstream.Msg, error) {
	sub, err := b.nc.SubscribeSync(b.nc.NewInbox())
	if err != nil {
		return nil, fmt.Errorf("consumer %s: pull inbox: %w", consumer, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := b.pullRequest(consumer, sub.Subject, 1, expires); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, expires+pullGrace)
	defer cancel()
	for {
		m, err := sub.NextMsgWithContext(wctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			return nil, nats.ErrTimeout
		case err != nil:
			return nil, err
		}
		msg, end, err := pullAnswer(consumer, m)
		switch {
		case msg:
			return &pulledMsg{m: m, nc: b.nc}, nil
		case end:
			return nil, err
		}
	}
}

// pullRequest asks consumer for up to n messages, sent to inbox as the
// server has them until expires has passed (then it answers 408).
func (b *Bus) pullRequest(consumer, inbox string, n int, expires time.Duration) error {
	req := fmt.Sprintf(`{"batch":%d,"expires":%d}`, n, expires.Nanoseconds())
	return b.nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+FactsStream+"."+consumer, inbox, []byte(req))
}

// pullAnswer reads one answer to a pull: a message (msg), an idle
// heartbeat (neither), or the pull's end (end) with why: nats.ErrTimeout
// when its time ran out with the batch short (404, 408);
// nats.ErrNoResponders when no server answers for the consumer (503); or
// the server's refusal (409 …: the consumer deleted, a leadership change,
// too many pulls waiting).
func pullAnswer(consumer string, m *nats.Msg) (msg, end bool, err error) {
	status := ""
	if len(m.Data) == 0 && m.Header != nil {
		status = m.Header.Get("Status")
	}
	switch status {
	case "":
		return true, false, nil
	case "100":
		return false, false, nil
	case "404", "408":
		return false, true, nats.ErrTimeout
	case "503":
		return false, true, nats.ErrNoResponders
	}
	desc := m.Header.Get("Description")
	err = fmt.Errorf("pull of consumer %s: %s %s", consumer, status, desc)
	switch {
	case status == "409" && desc == "Consumer Deleted":
		err = fmt.Errorf("%w (%w)", err, jetstream.ErrConsumerDeleted)
	case status == "409" && desc == "Leadership Change":
		err = fmt.Errorf("%w (%w)", err, jetstream.ErrConsumerLeadershipChanged)
	}
	return false, true, err
}

// pullGrace is how much longer than the server the client waits for a
// pull's answer (the server's 408 when nothing came).
const pullGrace = time.Second

// pulledMsg is a message an onDemandPull brought, as the bus handles
// every delivery (jetstream.Msg). Its acks go out on the connection its
// pull came in on.
type pulledMsg struct {
	m  *nats.Msg
	nc *nats.Conn
}

var _ jetstream.Msg = (*pulledMsg)(nil)

// Metadata reads the delivery's stream, consumer, sequences and counts
// from its reply subject.
func (p *pulledMsg) Metadata() (*jetstream.MsgMetadata, error) {
	md, err := p.m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", jetstream.ErrNotJSMessage, err)
	}
	return &jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered, NumPending: md.NumPending, Timestamp: md.Timestamp,
		Stream: md.Stream, Consumer: md.Consumer, Domain: md.Domain,
	}, nil
}

// Data is the message's body.
func (p *pulledMsg) Data() []byte { return p.m.Data }

// Headers are the message's headers.
func (p *pulledMsg) Headers() nats.Header { return p.m.Header }

// Subject is the subject the message was stored under.
func (p *pulledMsg) Subject() string { return p.m.Subject }

// Reply is the delivery's ack subject.
func (p *pulledMsg) Reply() string { return p.m.Reply }

func (p *pulledMsg) ack(body string) error {
	if !strings.HasPrefix(p.m.Reply, "$JS.ACK.") {
		return jetstream.ErrMsgNoReply
	}
	return p.nc.Publish(p.m.Reply, []byte(body))
}

// Ack acknowledges the delivery.
func (p *pulledMsg) Ack() error { return p.ack("+ACK") }

// DoubleAck acknowledges it and waits for the server to confirm.
func (p *pulledMsg) DoubleAck(ctx context.Context) error {
	if !strings.HasPrefix(p.m.Reply, "$JS.ACK.") {
		return jetstream.ErrMsgNoReply
	}
	_, err := p.nc.RequestWithContext(ctx, p.m.Reply, []byte("+ACK"))
	return err
}

// Nak hands the delivery back for redelivery at once.
func (p *pulledMsg) Nak() error { return p.ack("-NAK") }

// NakWithDelay hands it back for redelivery after delay.
func (p *pulledMsg) NakWithDelay(delay time.Duration) error {
	if delay <= 0 {
		return p.Nak()
	}
	return p.ack(fmt.Sprintf(`-NAK {"delay": %d}`, delay.Nanoseconds()))
}

// InProgress resets the delivery's ack wait.
func (p *pulledMsg) InProgress() error { return p.ack("+WPI") }

// Term settles it without redelivery.
func (p *pulledMsg) Term() error { return p.ack("+TERM") }

// TermWithReason is Term with a reason the server reports in its advisory.
func (p *pulledMsg) TermWithReason(reason string) error { return p.ack("+TERM " + reason) }
