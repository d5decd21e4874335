package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// batchPull is one pull request for up to n messages of a consumer that
// pulls ahead, made on an inbox of its own on the bus's connection, as
// pullOne makes an on-demand one. nats.go's Fetch withdraws its inbox
// from a goroutine of the client a moment after its caller stops reading,
// which nothing can wait for: a nak sent in that moment (the hand-back of
// a delivery stopped at shutdown) could reach the server first and be
// delivered into the ending pull, to be lost with the process and come
// back only after the ack wait. A batchPull is withdrawn by close, which
// writes the unsubscribe to the connection every ack goes out on before
// it returns: once the pull loop has closed its pull, the server reads the
// unsubscribe before any nak sent after, and hands the message to another
// instance's pull, never back into this one (handBackStopped).
//
// The pull loop reads arrivals from in (nil for no pull, so that a select
// on it waits for ever) and makes each a message or the pull's end with
// take; expired fires once the server has had its time to answer and
// more.
type batchPull struct {
	nc       *nats.Conn
	consumer string
	sub      *nats.Subscription
	in       chan *nats.Msg
	left     int       // messages the server may still send
	sent     time.Time // when the request was sent: its deliveries' leases count from it
	guard    *time.Timer
}

// pullStatusRoom is how many answers other than messages a pull's inbox
// holds besides its batch: the status that ends it, and heartbeats. A
// channel subscription drops what does not fit (a slow consumer).
const pullStatusRoom = 8

// pullBatch asks consumer for up to n messages, which the server sends as
// it has them until expires has passed (then it answers 408).
func (b *Bus) pullBatch(consumer string, n int, expires time.Duration) (*batchPull, error) {
	in := make(chan *nats.Msg, n+pullStatusRoom)
	sub, err := b.nc.ChanSubscribe(b.nc.NewInbox(), in)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: pull inbox: %w", consumer, err)
	}
	sent := time.Now()
	if err := b.pullRequest(consumer, sub.Subject, n, expires); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("consumer %s: pull: %w", consumer, err)
	}
	return &batchPull{nc: b.nc, consumer: consumer, sub: sub, in: in, left: n, sent: sent,
		guard: time.NewTimer(expires + pullGrace)}, nil
}

// arrivals is what the pull's inbox receives; nil without a pull.
func (p *batchPull) arrivals() <-chan *nats.Msg {
	if p == nil {
		return nil
	}
	return p.in
}

// expired fires when the server, had it answered, would have ended the
// pull: a pull lost with a server or a stream leader. Nil without a pull.
func (p *batchPull) expired() <-chan time.Time {
	if p == nil {
		return nil
	}
	return p.guard.C
}

// take reads one arrival: a message (m), or nothing (an idle heartbeat).
// end says that the server sends nothing more for this pull, with why:
// nil once the batch is complete, otherwise as pullAnswer says.
func (p *batchPull) take(raw *nats.Msg) (m jetstream.Msg, end bool, err error) {
	msg, end, err := pullAnswer(p.consumer, raw)
	if !msg {
		return nil, end, err
	}
	p.left--
	return &pulledMsg{m: raw, nc: p.nc}, p.left <= 0, nil
}

// finish lets go of a pull the server ended (take said so): nothing more
// comes for it, so its inbox is only unsubscribed.
func (p *batchPull) finish() {
	p.guard.Stop()
	_ = p.sub.Unsubscribe()
}

// drainWait bounds how long close waits for the server to confirm that it
// withdrew the pull. Less than handBackWait, so that a delivery stopped
// at shutdown, which waits for the pull loop to return, is handed back at
// once.
const drainWait = time.Second

// close withdraws the pull and returns the messages the server sent it
// before it read the withdrawal, which nobody took yet: the caller hands
// them back. The unsubscribe is written to the connection before close
// returns (see batchPull); close then waits, up to drainWait, for the
// server's answer to a ping sent after it, by which every message sent
// before it has arrived. Should that not come (the connection is down),
// what is still on its way is not read, and waits out its ack wait.
func (p *batchPull) close() []jetstream.Msg {
	if p == nil {
		return nil
	}
	p.guard.Stop()
	closed := p.sub.StatusChanged(nats.SubscriptionClosed)
	if err := p.sub.Drain(); err != nil {
		_ = p.sub.Unsubscribe()
	} else {
		t := time.NewTimer(drainWait)
		select {
		case <-closed:
		case <-t.C:
			_ = p.sub.Unsubscribe()
		}
		t.Stop()
	}
	var left []jetstream.Msg
	for {
		select {
		case raw := <-p.in:
			if m, _, err := p.take(raw); m != nil && err == nil {
				left = append(left, m)
			}
		default:
			return left
		}
	}
}
