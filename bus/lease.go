package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrLeaseLapsed says that a delivery's lease may have run out: the server
// may have handed the message to another instance, which holds it now.
var ErrLeaseLapsed = errors.New("the delivery's lease lapsed: the message may be another instance's now")

// ackProgress is JetStream's in-progress acknowledgement.
var ackProgress = []byte("+WPI")

// Lease is an instance's hold on one delivery. The server hands a message
// it delivered to nobody else until the ack wait has passed since the
// delivery or since its newest in-progress ack; but it keeps one pending
// entry per message and takes an in-progress ack (or an ack, or a nak)
// from any delivery of it for the newest one, so an ack says nothing about
// whose delivery it kept. A lease is therefore held only while it is
// unbroken: from the pull that brought the delivery, every in-progress ack
// the server confirmed came back before the ack wait had passed since the
// sending of the one before (or of the pull), so that no redelivery fits
// between them. Times are the instance's monotonic clock, and each
// confirmation counts from when its ack was sent, not answered: the
// server took it somewhere between the two, and only the sending is known
// to be no later than that.
//
// Until is when the hold ends unless it is renewed; Held says whether it
// still holds. Once a confirmation comes back too late the lease has
// lapsed for good: the message may be redelivered, and this delivery must
// neither act on it nor settle it (ack, nak), which would act on the
// other holder's.
type Lease struct {
	nc      *nats.Conn
	reply   string
	ackWait time.Duration
	got     time.Time // when the delivery arrived

	mu      sync.Mutex
	renewed time.Time // sending of the newest confirmed in-progress ack, or of the pull
	lapsed  bool
}

// newLease is the lease of a delivery that arrived now, brought by a pull
// sent at pulled.
func newLease(nc *nats.Conn, reply string, ackWait time.Duration, pulled time.Time) *Lease {
	return &Lease{nc: nc, reply: reply, ackWait: ackWait, got: time.Now(), renewed: pulled}
}

// AckWait is the consumer's ack wait, as this instance configured it.
func (l *Lease) AckWait() time.Duration { return l.ackWait }

// Received is when the delivery arrived.
func (l *Lease) Received() time.Time { return l.got }

// Renewed is the sending of the newest in-progress ack the server
// confirmed in time (or of the pull that brought the delivery); zero once
// the lease lapsed, or for no lease.
func (l *Lease) Renewed() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lapsed {
		return time.Time{}
	}
	return l.renewed
}

// Until is when the lease runs out unless it is renewed (zero once it
// lapsed).
func (l *Lease) Until() time.Time {
	r := l.Renewed()
	if r.IsZero() {
		return r
	}
	return r.Add(l.ackWait)
}

// Held reports whether the lease holds at now: no other instance can have
// been handed the message since this delivery. A nil lease (a delivery
// made up rather than delivered) holds nothing.
func (l *Lease) Held(now time.Time) bool {
	u := l.Until()
	return !u.IsZero() && now.Before(u)
}

// Renew sends an in-progress ack and waits, as long as ctx lets it, for
// the server to confirm it. It returns the sending of the newest confirmed
// ack (see Renewed). A confirmation that came back after the lease could
// have run out breaks it for good: ErrLeaseLapsed.
func (l *Lease) Renew(ctx context.Context) (time.Time, error) {
	if l == nil {
		return time.Time{}, fmt.Errorf("renew: %w: no delivery", ErrLeaseLapsed)
	}
	sent := time.Now()
	_, err := l.nc.RequestWithContext(ctx, l.reply, ackProgress)
	back := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lapsed {
		return time.Time{}, fmt.Errorf("renew: %w", ErrLeaseLapsed)
	}
	if err != nil {
		if !back.Before(l.renewed.Add(l.ackWait)) {
			l.lapsed = true // nothing confirmed it in time, and nothing can now
			return time.Time{}, fmt.Errorf("renew: %w (the last try: %w)", ErrLeaseLapsed, err)
		}
		return time.Time{}, fmt.Errorf("renew the delivery's lease: %w", err)
	}
	if !back.Before(l.renewed.Add(l.ackWait)) {
		l.lapsed = true
		return time.Time{}, fmt.Errorf("renew: %w: confirmed %v after the lease was last renewed, the ack wait is %v",
			ErrLeaseLapsed, back.Sub(l.renewed).Round(time.Millisecond), l.ackWait)
	}
	if sent.After(l.renewed) {
		l.renewed = sent
	}
	return l.renewed, nil
}

// beat renews the lease within bound, for the heartbeats that keep a
// delivery alive; a failure is left to the next beat.
func (l *Lease) beat(ctx context.Context, bound time.Duration) {
	bctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	_, _ = l.Renew(bctx)
}

// delivered is a delivery a consumer holds, with its lease.
type delivered struct {
	m     jetstream.Msg
	lease *Lease
}

// delivered wraps a message that arrived now, brought by a pull sent at
// pulled.
func (b *Bus) delivered(m jetstream.Msg, ackWait time.Duration, pulled time.Time) delivered {
	return delivered{m: m, lease: newLease(b.nc, m.Reply(), ackWait, pulled)}
}
