package bus

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// replyMux receives the answers to every direct get a Bus sends over one
// wildcard subscription, and hands each to the getter whose token its
// subject ends in. A subscription per load would cost a SUB and an UNSUB
// on the server per load and, in nats.go, a 64k-slot channel allocated and
// zeroed each time: loading runs is what every service does for every
// message, and that allocation was the largest cost of a service in the
// benchmarks (docs/benchmarks.md).
type replyMux struct {
	nc     *nats.Conn
	once   sync.Once
	err    error
	prefix string // "<inbox>."
	sub    *nats.Subscription
	next   atomic.Uint64
	mu     sync.Mutex
	boxes  map[string]*replyBox
}

// replyBox queues the answers of one getter. The queue is unbounded so that
// the shared subscription never blocks on a slow reader; a getter only has
// as many answers coming as it sent requests.
type replyBox struct {
	mu    sync.Mutex
	queue []*nats.Msg
	ready chan struct{} // signalled when the queue grows
}

func newReplyMux(nc *nats.Conn) *replyMux {
	return &replyMux{nc: nc, boxes: map[string]*replyBox{}}
}

// open returns a fresh reply subject and the box its answers go to.
func (m *replyMux) open() (string, string, *replyBox, error) {
	m.once.Do(func() {
		m.prefix = m.nc.NewInbox() + "."
		m.sub, m.err = m.nc.Subscribe(m.prefix+"*", m.deliver)
	})
	if m.err != nil {
		return "", "", nil, m.err
	}
	token := strconv.FormatUint(m.next.Add(1), 36)
	box := &replyBox{ready: make(chan struct{}, 1)}
	m.mu.Lock()
	m.boxes[token] = box
	m.mu.Unlock()
	return m.prefix + token, token, box, nil
}

// close forgets a box; answers still on their way to it are dropped.
// stop gives the shared subscription back; a direct get after it fails
// with errClosed.
func (m *replyMux) stop() {
	m.once.Do(func() { m.err = errClosed })
	if m.sub != nil {
		_ = m.sub.Unsubscribe()
	}
}

func (m *replyMux) close(token string) {
	m.mu.Lock()
	delete(m.boxes, token)
	m.mu.Unlock()
}

func (m *replyMux) deliver(msg *nats.Msg) {
	if len(msg.Subject) <= len(m.prefix) {
		return
	}
	m.mu.Lock()
	box := m.boxes[msg.Subject[len(m.prefix):]]
	m.mu.Unlock()
	if box == nil {
		return // a late answer to a getter that gave up
	}
	box.mu.Lock()
	box.queue = append(box.queue, msg)
	box.mu.Unlock()
	select {
	case box.ready <- struct{}{}:
	default:
	}
}

// next returns the box's next answer, waiting for it until ctx ends.
func (b *replyBox) next(ctx context.Context) (*nats.Msg, error) {
	for {
		b.mu.Lock()
		if len(b.queue) > 0 {
			m := b.queue[0]
			b.queue[0] = nil
			b.queue = b.queue[1:]
			b.mu.Unlock()
			return m, nil
		}
		b.mu.Unlock()
		select {
		case <-b.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
