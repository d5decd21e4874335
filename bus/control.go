package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
)

// Controls is a bus's handle on the CONTROL stream: control signals sent
// to runs and watched by their runners, and the runs' live status.
type Controls struct{ b *Bus }

// Controls returns the bus's handle on the CONTROL stream.
func (b *Bus) Controls() *Controls { return &Controls{b: b} }

// Send publishes a control signal for a run on the CONTROL stream. It is
// only a request: the run's runner decides whether and when to accept it,
// and commits control.accepted when it does.
func (h *Controls) Send(ctx context.Context, suite, run string, c events.Control) error {
	b := h.b
	if c.ID == "" {
		c.ID = events.NewID().String()
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("control: %w", err)
	}
	subj, err := events.ControlSubject(suite, run, c.Signal)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	data, _ := json.Marshal(c)
	pctx, cancel := apiCtx(ctx)
	defer cancel()
	// The sender chooses the ID, and deduplication spans the stream: scope
	// it by the run's subject, so that the same ID sent to another run is
	// another signal, and a resend to this run is the same one.
	if _, err := b.js.Publish(pctx, subj, data, jetstream.WithMsgID(subj+"/"+c.ID)); err != nil {
		return fmt.Errorf("send %s to %s/%s: %w", c.Signal, suite, run, serverError(err))
	}
	return nil
}

// ControlConsumer is the consumer name a refused control signal is
// dead-lettered under: dead.CONTROL.runner (the runners watch controls).
const ControlConsumer = "runner"

// Watch delivers the control signals of one run, from the oldest
// the CONTROL stream still holds, until ctx ends; the returned channel
// closes then. The watch outlives the bus failing under it: a server
// restart, a leader election, and CONTROL lost and made again (see
// keepStreams) only delay signals. A message that is not a valid signal,
// or whose body names another signal than its subject (a cancel sent on
// ctl.….steer), is refused: it is never delivered, and is dead-lettered
// with the reason. It fails only for a suite or run that is no valid
// subject token.
func (h *Controls) Watch(ctx context.Context, suite, run string) (<-chan events.Control, error) {
	ch, _, err := h.WatchCaughtUp(ctx, suite, run)
	return ch, err
}

// WatchCaughtUp is Watch, and also closes caughtUp once every signal the
// CONTROL stream held for the run when the watch began has been put on
// the channel: what was sent before a runner took the run, for it to
// take in before its first turn. A watch that cannot read CONTROL (it is
// missing) never closes caughtUp; the caller bounds its wait.
func (h *Controls) WatchCaughtUp(ctx context.Context, suite, run string) (sigs <-chan events.Control, caughtUp <-chan struct{}, err error) {
	b := h.b
	for what, tok := range map[string]string{"suite": suite, "run": run} {
		if err := events.ValidateToken(what, tok); err != nil {
			return nil, nil, fmt.Errorf("watch controls of %s/%s: %w", suite, run, err)
		}
	}
	w := &controlWatch{b: b, filter: events.ControlPrefix + "." + suite + "." + run + ".*", out: make(chan events.Control, 16), sent: map[string]bool{},
		caught: make(chan struct{})}
	go func() {
		defer close(w.out)
		w.run(ctx)
	}()
	return w.out, w.caught, nil
}

// controlWatch is one run's watch of its control signals.
type controlWatch struct {
	b      *Bus
	filter string
	out    chan events.Control
	// sent holds the IDs of the signals delivered: a watch that starts
	// again reads from the oldest signal CONTROL holds (sequences start
	// over in a CONTROL made again, so where it was says nothing) and
	// delivers each signal once.
	sent map[string]bool
	// caught is closed once the signals stored when the first consumer
	// was made are on out (WatchCaughtUp).
	caught     chan struct{}
	caughtOnce sync.Once
}

func (w *controlWatch) caughtUp() { w.caughtOnce.Do(func() { close(w.caught) }) }

// controlWait bounds one pull of a control watch, so that a watch whose
// consumer was lost with a restarted server notices and makes another.
const controlWait = 5 * time.Second

// controlHeartbeat is how often the server tells a waiting pull of a
// control watch that its consumer is alive. A pull that hears nothing for
// two of them fails, and the watch makes another consumer: its consumer's
// node is frozen or cut off without a reset, its routes still count as up
// (until the cluster's pings go unanswered, minutes later), and pulls sent
// there were never answered, so the watch read empty batches all that
// time and a cancel sent meanwhile never reached the run. A node that is
// killed closes its routes, and the pull is answered "no responders".
const controlHeartbeat = 2 * time.Second

func (w *controlWatch) run(ctx context.Context) {
	for try := 0; ctx.Err() == nil; try++ {
		err := w.once(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			w.b.wantStreams()
		}
		if try == 0 || try%10 == 9 {
			w.b.log.Warn("control watch interrupted; watching again", "filter", w.filter, "err", err)
		}
		if sleep.For(ctx, infraBackoff(try)) != nil {
			return
		}
	}
}

// once watches through one consumer until it fails or ctx ends.
func (w *controlWatch) once(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	cfg := jetstream.ConsumerConfig{
		FilterSubject:     w.filter,
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: orderedIdle,
		MemoryStorage:     true,
		Replicas:          1,
	}
	// Made to the end even if the watch ends meanwhile: a create cut
	// short may still make the consumer on the server, where nobody would
	// delete it.
	actx, cancel := apiCtx(context.WithoutCancel(ctx))
	cons, err := w.b.js.CreateConsumer(actx, ControlStream, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.filter, err)
	}
	defer w.b.dropOrdered(ControlStream, cons)
	// What the stream held for the run when the consumer was made: once
	// as many messages were handled, the watch has caught up.
	left := cons.CachedInfo().NumPending
	if left == 0 {
		w.caughtUp()
	}
	// A "no responders" to the first pulls may be the client's node not
	// knowing the new consumer yet (freshConsumer).
	fresh := newFresh()
	for ctx.Err() == nil {
		batch, err := cons.Fetch(16, jetstream.FetchMaxWait(controlWait), jetstream.FetchHeartbeat(controlHeartbeat))
		if fresh.unknownYet(err) {
			if sleep.For(ctx, consumerInterestPause) != nil {
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", w.filter, err)
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			if c, ok := w.b.checkControl(ctx, m, md.Sequence.Stream); ok && !w.sent[c.ID] {
				w.sent[c.ID] = true
				select {
				case w.out <- c:
				case <-ctx.Done():
					return nil
				}
			}
			if left > 0 {
				if left--; left == 0 {
					w.caughtUp()
				}
			}
		}
		if err := batch.Error(); fresh.unknownYet(err) {
			if sleep.For(ctx, consumerInterestPause) != nil {
				return nil
			}
			continue
		} else if err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("watch %s: %w", w.filter, err)
		}
		fresh.answer()
		if !w.b.nc.IsConnected() {
			return fmt.Errorf("watch %s: %w", w.filter, nats.ErrDisconnected)
		}
	}
	return nil
}

// checkControl decodes a control signal and checks it against its
// subject; a signal that fails is refused and dead-lettered with why.
func (b *Bus) checkControl(ctx context.Context, m jetstream.Msg, seq uint64) (events.Control, bool) {
	c, err := events.DecodeControl(m.Data())
	sent := m.Subject()[strings.LastIndexByte(m.Subject(), '.')+1:]
	reason := ""
	switch {
	case err != nil:
		reason = "not a valid control signal: " + err.Error()
	case string(c.Signal) != sent:
		reason = fmt.Sprintf("control signal %s names signal %q in its body but was sent on %s (a %s signal): refused, since a signal is what its subject says, and the subject is what permissions and operators see", c.ID, c.Signal, m.Subject(), sent)
	default:
		return c, true
	}
	b.log.Warn("refusing a control signal", "subject", m.Subject(), "reason", reason)
	for try := 0; ; try++ {
		err := b.deadLetter(ctx, ControlStream, ControlConsumer, m.Subject(), seq, 1, m.Data(), reason)
		if err == nil || !Transient(err) || try >= 5 || sleep.For(ctx, infraBackoff(try)) != nil {
			if err != nil {
				b.log.Error("could not dead-letter a refused control signal; it stays refused", "subject", m.Subject(), "err", err)
			}
			return events.Control{}, false
		}
	}
}

// PublishStatus publishes a run's live status (heartbeat, phase, progress)
// on status.<suite>.<run>. Status may vanish; nothing is rebuilt from it.
func (h *Controls) PublishStatus(suite, run string, status any) error {
	b := h.b
	subj, err := events.StatusSubject(suite, run)
	if err != nil {
		return err
	}
	data, err := json.Marshal(status)
	if err != nil {
		return err
	}
	// Fire and forget: a lost heartbeat costs nothing.
	return b.nc.PublishMsg(&nats.Msg{Subject: subj, Data: data})
}
