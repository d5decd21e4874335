package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/ops/metrics"
)

// ConsumerConfig describes a durable pull consumer on FACTS shared by every
// instance of a service.
type ConsumerConfig struct {
	// Name is the durable name; every instance of a service uses the same.
	Name string
	// Filters are the subjects to consume (e.g. events.KindFilter(kind)).
	Filters []string
	// MaxDeliver is how many times a message is tried before it is
	// dead-lettered (default 5).
	MaxDeliver int
	// AckWait is how long a delivery may go without an ack or a progress
	// heartbeat before the server redelivers it (default 30s). Handlers that
	// run longer are kept alive by heartbeats every AckWait/3.
	AckWait time.Duration
	// Prefetch bounds how many messages this instance buffers (default 8,
	// or Workers when that is more).
	// Small on purpose: a large prefetch processed slowly causes
	// redelivery storms.
	Prefetch int
	// Workers is how many messages this instance handles at once (default 1).
	Workers int
	// OrderByRun handles the deliveries of one run (one fact subject's
	// <suite>.<run>) one at a time, in the order they were delivered, and
	// those of different runs in parallel, up to Workers: a service that
	// folds a run's facts never sees two of one run at once, and a run
	// whose handler is slow holds up no other run. Without it any worker
	// takes the next delivery, whatever its run.
	OrderByRun bool
	// MaxAckPending bounds unacknowledged messages across all instances
	// (default 256).
	MaxAckPending int
	// DeliverNew starts a new consumer at the stream's end instead of its
	// beginning.
	DeliverNew bool
	// OnDemand pulls a message only when a worker is free (Prefetch is then
	// unused). A prefetched message waits, delivered but not worked on and
	// so without heartbeats, until a worker is free; behind handlers that
	// run for longer than the ack wait (a runner's runs) it is delivered
	// again and again, and passes MaxDeliver without ever being handled.
	OnDemand bool
	// OnDeadLetter, when set, is called after a fact was moved to the
	// dead-letter stream (it is safe there), with the reason: the service
	// may record that it gave up on it. An error is logged.
	OnDeadLetter func(ctx context.Context, d Delivery, reason string) error

	// stopping is this instance's pull loop as it stops (Consume sets it),
	// for handBackStopped.
	stopping *pullStop
}

// pullStop is an instance's pull loop as it stops: done is closed once it
// has returned, after which it asks the server for nothing more.
type pullStop struct {
	done chan struct{}
}

func (c *ConsumerConfig) defaults() error {
	if c.Name == "" {
		return errors.New("consumer: Name is required")
	}
	if err := events.ValidateToken("consumer name", c.Name); err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	if len(c.Filters) == 0 {
		return fmt.Errorf("consumer %s: at least one filter subject is required", c.Name)
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.Prefetch <= 0 {
		// At least a delivery for each worker, so that a pull keeps them
		// all busy.
		c.Prefetch = max(8, c.Workers)
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 256
	}
	return nil
}

// Delivery is one fact handed to a Handler.
type Delivery struct {
	Record
	// Deliveries counts how many times this message was delivered (1 first).
	Deliveries uint64
	// Pending is how many messages the consumer had left after this one.
	Pending uint64
	// Lease is this instance's hold on the delivery (nil when the
	// delivery was made up rather than delivered): whether another
	// instance may have been handed the message since, and the confirmed
	// in-progress ack a handler renews it with before work that must not
	// be done twice (see Lease).
	Lease *Lease
	// raw is the delivered message as a direct get would return it (its
	// run links included), for RunLogs.LoadDelivered; nil when the
	// delivery was made up rather than delivered.
	raw *nats.Msg
}

// Handler processes one delivered fact. Returning nil acknowledges it; an
// error asks for redelivery with backoff until MaxDeliver, after which the
// message is dead-lettered with the error as reason. Wrap an error with
// Permanent to dead-letter at once.
type Handler func(ctx context.Context, d Delivery) error

type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent marks an error that no retry can fix: the message goes to the
// dead-letter stream at once.
func Permanent(err error) error { return permanentError{err} }

// Consume runs a handler over a durable consumer until ctx is done. Messages
// that do not decode as facts are dead-lettered without calling the handler;
// the consumer keeps going either way. On shutdown, deliveries in progress
// are handed back (nak) for another instance, never acknowledged unfinished.
func (b *Bus) Consume(ctx context.Context, cfg ConsumerConfig, h Handler) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	deliver := jetstream.DeliverAllPolicy
	if cfg.DeliverNew {
		deliver = jetstream.DeliverNewPolicy
	}
	ccfg := jetstream.ConsumerConfig{
		Durable:        cfg.Name,
		FilterSubjects: cfg.Filters,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        cfg.AckWait,
		// The bus counts deliveries itself (handle) and the server never
		// stops delivering: a message the server gave up on would be left
		// undeliverable without its fact or its dead letter, and a dead
		// letter may have to wait for a full store to take it.
		MaxDeliver:    -1,
		MaxAckPending: cfg.MaxAckPending,
		DeliverPolicy: deliver,
	}
	if err := b.sameAckWait(ctx, cfg); err != nil {
		return err
	}
	actx, cancel := apiCtx(ctx)
	_, err := b.js.CreateOrUpdateConsumer(actx, FactsStream, ccfg)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			// Stopped while the consumer was being made: a shutdown in
			// the service's first moments, not a fault of the consumer.
			return nil
		}
		return fmt.Errorf("consumer %s: %w", cfg.Name, err)
	}
	// A "no responders" to the first pulls may be the client's node not
	// knowing the consumer yet (freshConsumer), not an interruption.
	fresh := newFresh()
	zeroConsumerCounters(cfg)
	var free chan struct{} // a token per idle worker, for OnDemand
	if cfg.OnDemand {
		free = make(chan struct{}, cfg.Workers)
		for range cfg.Workers {
			free <- struct{}{}
		}
	}
	stopping := &pullStop{done: make(chan struct{})}
	cfg.stopping = stopping
	work := make(chan delivered)
	var wg sync.WaitGroup
	if cfg.OrderByRun {
		wg.Go(func() { b.handleByRun(ctx, cfg, h, work, free) })
	} else {
		for range cfg.Workers {
			wg.Go(func() {
				for d := range work {
					b.handle(ctx, cfg, h, d)
					if cfg.OnDemand {
						free <- struct{}{}
					}
				}
			})
		}
	}
	wg.Go(func() { b.followPending(ctx, cfg) })
	defer func() {
		close(work)
		wg.Wait()
	}()
	// Deferred last, so run first: the pull loop has returned before the
	// workers are waited for (handBackStopped waits for it).
	defer close(stopping.done)
	// The pull loop outlives what a cluster does to it: a missed heartbeat
	// while a stream leader is elected, a consumer whose state moved, a
	// connection that came back. It reports and pulls again; only the end
	// of ctx stops it.
	for attempt := 0; ; attempt++ {
		if cfg.OnDemand {
			err = b.pullOnDemand(ctx, cfg, fresh, free, work)
		} else {
			err = b.pull(ctx, cfg, fresh, work)
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrNoStreamResponse) {
			b.wantStreams()
		}
		b.log.Warn("consumer interrupted; pulling again", "consumer", cfg.Name, "err", err)
		if err := sleep.For(ctx, backoff(min(attempt, 8))); err != nil {
			return nil
		}
		actx, cancel := apiCtx(ctx)
		if _, cerr := b.js.CreateOrUpdateConsumer(actx, FactsStream, ccfg); cerr == nil {
			fresh = newFresh()
		}
		cancel()
	}
}

// onDemandWait bounds one on-demand pull request, so that a pull lost with
// a stream leader is noticed and made again.
const onDemandWait = 10 * time.Second

// pullBound bounds one pull request by limit and by a quarter of the ack
// wait. A delivery's lease counts from the pull's sending (the server
// delivered no earlier), and holds only if the first heartbeat is
// confirmed within the ack wait of that (see Lease): a pull that waited
// long for its message would leave its delivery a lease that seemed to
// have run out before it began.
func pullBound(limit, ackWait time.Duration) time.Duration { return min(limit, ackWait/4) }

// pullOnDemand fetches one message each time a worker is free and hands it
// over, until a fetch keeps failing or ctx ends. A fetch of the consumer
// answered "no responders" while its node may not know it yet (fresh) is
// made again in place, without counting.
func (b *Bus) pullOnDemand(ctx context.Context, cfg ConsumerConfig, fresh *freshConsumer, free chan struct{}, work chan<- delivered) error {
	misses := 0
	for {
		select {
		case <-free:
		case <-ctx.Done():
			return ctx.Err()
		}
		var m jetstream.Msg
		var err error
		var pulled time.Time
		for m == nil {
			if !b.nc.IsConnected() {
				// See pull: a request made now would be answered to nobody.
				if sleep.For(ctx, infraBackoff(1)) == nil {
					continue
				}
			}
			pulled = time.Now()
			// Its inbox is withdrawn once it returns (pullOne): a hand-back
			// after the loop has returned cannot land in it.
			m, err = b.pullOne(ctx, cfg.Name, pullBound(onDemandWait, cfg.AckWait))
			switch {
			case ctx.Err() != nil:
				if m != nil {
					handBackMsg(m, cfg.AckWait) // fetched as the service stopped
				}
				free <- struct{}{}
				return ctx.Err()
			case err == nil:
				fresh.answer()
			case errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
				fresh.answer()
				misses = 0 // nothing to do yet
			case fresh.unknownYet(err):
				if sleep.For(ctx, consumerInterestPause) != nil {
					free <- struct{}{}
					return ctx.Err()
				}
			default:
				if misses++; misses > 3 {
					free <- struct{}{}
					return err
				}
				b.log.Debug("consumer pull error", "consumer", cfg.Name, "err", err)
			}
		}
		misses = 0
		work <- b.delivered(m, cfg.AckWait, pulled) // a worker is free: it gave its token back
	}
}

// pullWait bounds one pull request, so that a pull lost with a server or
// a stream leader is noticed and made again.
const pullWait = 5 * time.Second

// pull fetches up to Prefetch messages ahead of the workers and hands them
// over in order, until fetching keeps failing or ctx ends. Every message
// it holds for a worker gets progress heartbeats: a message waiting behind
// workers that are slow, or that wait for a full store to take writes
// again, must not be redelivered meanwhile, which would spend its delivery
// budget without it ever being handled. A pull of the consumer answered
// "no responders" while its node may not know it yet (fresh) is made
// again, without counting. Its pulls are the bus's own (batchPull): when
// it returns, the one open is withdrawn, and what it brought that no
// worker took is handed back at once (no pull of this instance is left
// for a nak to go back into).
func (b *Bus) pull(ctx context.Context, cfg ConsumerConfig, fresh *freshConsumer, work chan<- delivered) error {
	var queue []delivered
	var open *batchPull
	defer func() {
		for _, m := range open.close() {
			queue = append(queue, b.delivered(m, cfg.AckWait, open.sent))
		}
		for _, d := range queue {
			b.handBackNow(d, cfg) // fetched as the service stopped
		}
	}()
	beat := time.NewTicker(cfg.AckWait / 3)
	defer beat.Stop()
	var retryAt time.Time
	misses := 0
	fail := func(err error) error {
		if fresh.unknownYet(err) {
			retryAt = time.Now().Add(consumerInterestPause)
			return nil
		}
		if misses++; misses > 3 {
			return err
		}
		b.log.Debug("consumer pull error", "consumer", cfg.Name, "err", err)
		retryAt = time.Now().Add(backoff(misses + 4))
		return nil
	}
	// ended lets the open pull go, the server having ended it (or taken
	// too long to), and counts why it ended.
	ended := func(err error, byServer bool) error {
		if byServer {
			open.finish()
		} else {
			for _, m := range open.close() {
				queue = append(queue, b.delivered(m, cfg.AckWait, open.sent))
			}
		}
		open = nil
		if err == nil || errors.Is(err, nats.ErrTimeout) {
			fresh.answer()
			return nil
		}
		return fail(err)
	}
	for {
		// A pull request made while the connection is down would wait in
		// the client's buffer and reach the server after the reconnect,
		// when nobody listens for its answer: what it brought would count
		// as delivered and wait out an ack wait.
		// A new pull waits until half the queue is gone, so that pulls
		// bring batches rather than one message each.
		if open == nil && len(queue) <= cfg.Prefetch/2 && b.nc.IsConnected() && !time.Now().Before(retryAt) {
			var err error
			if open, err = b.pullBatch(cfg.Name, cfg.Prefetch-len(queue), pullBound(pullWait, cfg.AckWait)); err != nil {
				open = nil
				if err := fail(err); err != nil {
					return err
				}
			}
		}
		var out chan<- delivered
		var next delivered
		if len(queue) > 0 {
			out, next = work, queue[0]
		}
		var recheck <-chan time.Time
		if open == nil && len(queue) <= cfg.Prefetch/2 {
			recheck = time.After(infraBackoff(1))
		}
		select {
		case raw := <-open.arrivals():
			m, end, err := open.take(raw)
			if m != nil {
				misses = 0
				fresh.answer()
				queue = append(queue, b.delivered(m, cfg.AckWait, open.sent))
			}
			if end {
				if err := ended(err, true); err != nil {
					return err
				}
			}
		case <-open.expired():
			// The server never ended it: lost with a server or a stream
			// leader, as nats.go's Fetch took it (a timeout).
			if err := ended(nats.ErrTimeout, false); err != nil {
				return err
			}
		case out <- next:
			queue = queue[1:]
		case <-beat.C:
			for _, d := range queue {
				go d.lease.beat(ctx, cfg.AckWait/3)
			}
		case <-recheck:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// handle runs one delivery to its end: ack, nak with backoff, or
// dead-letter. Whatever it decides, a message is acknowledged or termed
// only once its effect or its dead letter is committed.
func (b *Bus) handle(ctx context.Context, cfg ConsumerConfig, h Handler, dl delivered) {
	m := dl.m
	md, err := m.Metadata()
	if err != nil {
		// Not a JetStream delivery at all: nothing to count it by, and
		// nothing to settle.
		b.log.Error("message without metadata", "consumer", cfg.Name, "subject", m.Subject(), "err", err)
		return
	}
	metrics.ConsumerPending.WithLabelValues(cfg.Name).Set(float64(md.NumPending))
	if md.NumDelivered > 1 {
		metrics.Redeliveries.WithLabelValues(cfg.Name).Inc()
	}
	beat := cfg.AckWait / 3
	// dead dead-letters the message and then runs record (when set): the
	// service noting that it gave up (a runner ends the run errored), so
	// that the work the message stood for does not wait for ever. Both are
	// tried again in place while the bus fails under them (a full store, a
	// server gone), and the message is termed only once they are done; if
	// the service stops first it is handed back unsettled and comes back.
	dead := func(reason string, record func() error) {
		err := b.runWithHeartbeat(ctx, beat, dl.lease, func() error {
			if err := b.untilUp(ctx, cfg.Name, dl.lease, func() error {
				return b.deadLetter(ctx, FactsStream, cfg.Name, m.Subject(), md.Sequence.Stream, md.NumDelivered, m.Data(), reason)
			}); err != nil {
				return err
			}
			metrics.DeadLetters.WithLabelValues(cfg.Name).Inc()
			if record == nil {
				return nil
			}
			if err := b.untilUp(ctx, cfg.Name, dl.lease, record); err != nil && ctx.Err() == nil {
				// Safe in DEAD; what the service could not record is
				// for an operator reading the dead letter.
				b.log.Error("recording a dead-lettered fact failed", "consumer", cfg.Name, "seq", md.Sequence.Stream, "err", err)
			}
			return ctx.Err()
		})
		if err != nil {
			b.log.Error("dead-lettering did not finish; the message stays unsettled and comes back", "consumer", cfg.Name, "seq", md.Sequence.Stream, "err", err)
			b.handBack(dl, cfg)
			return
		}
		_ = m.Term()
	}
	deadFact := func(reason string, d Delivery) {
		var record func() error
		if cfg.OnDeadLetter != nil {
			record = func() error { return cfg.OnDeadLetter(ctx, d, reason) }
		}
		dead(reason, record)
	}
	f, err := events.DecodeStored(m.Subject(), m.Data())
	if errors.Is(err, events.ErrSubjectMismatch) {
		dead(err.Error(), nil)
		return
	}
	if err != nil {
		dead("undecodable fact: "+err.Error(), nil)
		return
	}
	d := Delivery{
		Record:     Record{Fact: f, Seq: md.Sequence.Stream, Subject: m.Subject(), MsgID: unscopeMsgID(f.Suite, m.Headers().Get(jetstream.MsgIDHeader))},
		Deliveries: md.NumDelivered,
		Pending:    md.NumPending,
		Lease:      dl.lease,
		raw:        asStored(m, md.Sequence.Stream),
	}
	if md.NumDelivered > uint64(cfg.MaxDeliver) {
		deadFact(fmt.Sprintf("delivered %d times without an answer (max %d)", md.NumDelivered, cfg.MaxDeliver), d)
		return
	}
	if pause := b.pauseOnce(); pause > 0 {
		b.log.Warn("fault: stalling a delivery without heartbeats", "consumer", cfg.Name, "seq", d.Seq, "for", pause)
		_ = sleep.For(ctx, pause)
	}
	// A handler that failed because the bus itself did (Transient: a
	// server restarting, a stream not back yet, a full store) is run again
	// in place, with heartbeats, for as long as that lasts: redelivering
	// it would spend the message's budget, which is for poison.
	err = b.runWithHeartbeat(ctx, beat, dl.lease, func() error {
		return b.untilUp(ctx, cfg.Name, dl.lease, func() error { return h(ctx, d) })
	})
	switch {
	case err == nil && b.redeliverFirst(md.NumDelivered):
		_ = m.Nak()
	case err == nil:
		metrics.FactsConsumed.WithLabelValues(cfg.Name, string(f.Kind())).Inc()
		if aerr := m.Ack(); aerr != nil {
			b.log.Warn("ack failed; the message will be redelivered and handled idempotently", "consumer", cfg.Name, "seq", d.Seq, "err", aerr)
		}
	case ctx.Err() != nil:
		// Shutting down: hand it back unfinished for another instance.
		b.handBackStopped(dl, cfg)
	case errors.Is(err, ErrHeldElsewhere):
		// The server keeps one pending entry per message, the newest
		// delivery's, and an ack from any delivery settles it: this one
		// must neither settle nor hand back the work the other holds.
		b.log.Info("another delivery holds this message; leaving it to that one", "consumer", cfg.Name, "seq", d.Seq, "delivery", md.NumDelivered, "err", err)
	case errors.As(err, new(permanentError)):
		deadFact(err.Error(), d)
	case md.NumDelivered >= uint64(cfg.MaxDeliver):
		deadFact(fmt.Sprintf("failed %d times, last: %v", md.NumDelivered, err), d)
	case !dl.lease.Held(time.Now()):
		// The message may be another instance's by now: a nak would
		// hand back the other's delivery. Its ack wait decides.
		b.log.Warn("handler failed after the delivery's lease lapsed; leaving the message to whoever holds it", "consumer", cfg.Name, "seq", d.Seq, "delivery", md.NumDelivered, "err", err)
	case errors.Is(err, ErrBehind):
		// The replicas that answered lag the leader: trying again at once
		// would only burn deliveries before they catch up.
		b.log.Warn("replicas behind; redelivering later", "consumer", cfg.Name, "seq", d.Seq, "delivery", md.NumDelivered, "err", err)
		_ = m.NakWithDelay(behindDelay(md.NumDelivered))
	default:
		b.log.Warn("handler failed; redelivering", "consumer", cfg.Name, "seq", d.Seq, "delivery", md.NumDelivered, "err", err)
		_ = m.NakWithDelay(backoff(int(md.NumDelivered) + 4))
	}
}

// untilUp runs fn, and again after a backoff for as long as it fails
// because the bus itself failed (Transient), until it succeeds, fails
// otherwise, or ctx ends. Each such retry is counted by cause and noted in
// the bus's health (a full store), and spends nothing of the message's
// delivery budget. It runs fn again only while the delivery's lease
// holds: a bus that failed long enough for the ack wait to pass without a
// confirmed heartbeat may have handed the message to another instance,
// whose work a retry here would redo (claim a run again under it, say).
// Then it gives the delivery up (ErrHeldElsewhere): the newest delivery's
// ack or ack wait decides, and if nobody else got it, it comes back.
func (b *Bus) untilUp(ctx context.Context, consumer string, lease *Lease, fn func() error) error {
	for try := 0; ; try++ {
		if try > 0 && !lease.Held(time.Now()) {
			return fmt.Errorf("%w: its lease lapsed while the bus failed under it", ErrHeldElsewhere)
		}
		err := fn()
		if err == nil || !Transient(err) || ctx.Err() != nil || errors.Is(err, ErrHeldElsewhere) || errors.As(err, new(permanentError)) {
			return err
		}
		cause := causeUnavailable
		switch {
		case StoreFull(err):
			cause = causeStoreFull
			b.noteWrite(err)
		case errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrNoStreamResponse):
			cause = causeStreamMissing
			b.wantStreams()
		}
		metrics.InfraRetries.WithLabelValues(consumer, cause).Inc()
		if try == 0 || try%10 == 9 {
			b.log.Warn("the bus failed under a delivery; trying it again in place", "consumer", consumer, "cause", cause, "try", try+1, "err", err)
		}
		if sleep.For(ctx, infraBackoff(try)) != nil {
			return err
		}
	}
}

// ErrHeldElsewhere, returned by a handler, says that another delivery of
// the same message holds its work (this handler was taken for lost while
// it was only slow, and the message was delivered again): the delivery is
// neither acknowledged, which would settle the message for the other
// holder too, so that its crash would no longer bring the message back,
// nor handed back. The newest delivery's ack or ack wait decides.
var ErrHeldElsewhere = errors.New("another delivery of this message holds its work")

// behindDelay is how long a delivery that met lagging replicas waits
// before its next try: 1 s, doubling to 8 s, so that MaxDeliver tries span
// tens of seconds rather than a fraction of one.
func behindDelay(delivered uint64) time.Duration {
	return time.Second << min(delivered-1, 3)
}

// handBackMsg returns an unfinished delivery on shutdown while a pull of
// this instance may still be open (an on-demand pull that brought it as
// the service stopped). A plain nak would have the server redeliver it at
// once to this still-registered consumer, which would nak it again,
// burning deliveries until the server drops the message; a delay lets
// this instance finish stopping first.
func handBackMsg(m jetstream.Msg, ackWait time.Duration) {
	_ = m.NakWithDelay(min(ackWait, 5*time.Second))
}

// handBack hands an unfinished delivery back (handBackMsg) while its
// lease holds; once it lapsed the message may be another instance's, and
// a nak would hand back that one's delivery under it: the message is left
// to its ack wait.
func (b *Bus) handBack(d delivered, cfg ConsumerConfig) {
	if !d.lease.Held(time.Now()) {
		b.log.Info("not handing back a delivery whose lease lapsed", "consumer", cfg.Name, "subject", d.m.Subject())
		return
	}
	handBackMsg(d.m, cfg.AckWait)
}

// handBackNow hands an unfinished delivery back with no delay, for another
// instance to take now, while its lease holds (see handBack). Only once
// this instance has no pull open that the server could fill with it: the
// pull loop withdrew its own before it returned, on the connection the
// nak goes out on.
func (b *Bus) handBackNow(d delivered, cfg ConsumerConfig) {
	if !d.lease.Held(time.Now()) {
		b.log.Info("not handing back a delivery whose lease lapsed", "consumer", cfg.Name, "subject", d.m.Subject())
		return
	}
	_ = d.m.Nak()
}

// handBackWait bounds how long a delivery stopped by the shutdown waits
// for its instance's pull loop to return before it is handed back with
// handBackMsg's delay instead.
const handBackWait = 2 * time.Second

// handBackStopped hands back a delivery whose handler the shutdown
// stopped, or that waited for a worker as it came (handleByRun): with no
// delay once the instance's pull loop has returned, so that another
// instance takes it now rather than after min(ack wait, 5 s). Once the
// handler has returned, the work it stood for has stopped here (a
// runner's attempt sends nothing more, and its facts are fenced by the
// run's claims and last sequence anyway; the other services' facts are
// deduplicated and conditional), and once the pull loop has returned this
// instance has no pull open: each pull's inbox is unsubscribed before the
// loop returns (pullOne, batchPull.close), on the connection the nak goes
// out on, so the server has withdrawn it before it reads the nak and
// gives the message to another instance's pull, never back to this one.
// A delivery whose pull loop did not return in time keeps handBackMsg's
// delay.
func (b *Bus) handBackStopped(d delivered, cfg ConsumerConfig) {
	if cfg.stopping == nil {
		b.handBack(d, cfg)
		return
	}
	select {
	case <-cfg.stopping.done:
	case <-time.After(handBackWait):
		b.handBack(d, cfg)
		return
	}
	b.handBackNow(d, cfg)
}

// runWithHeartbeat runs fn, renewing the delivery's lease every period
// (an in-progress ack the server confirms, see Lease) so that it is not
// redelivered meanwhile.
func (b *Bus) runWithHeartbeat(ctx context.Context, period time.Duration, lease *Lease, fn func() error) error {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				lease.beat(ctx, period)
			}
		}
	})
	err := fn()
	close(done)
	wg.Wait()
	return err
}

// The causes untilUp counts retries by (factline_bus_infra_retries_total).
const (
	causeUnavailable   = "unavailable"
	causeStoreFull     = "store_full"
	causeStreamMissing = "stream_missing"
)

var infraCauses = []string{causeUnavailable, causeStoreFull, causeStreamMissing}

// zeroConsumerCounters exports a consumer's labelled counters at 0 from its
// start: Prometheus sees no increase in a series that first appears at 1,
// so an alert on the first dead letter would miss it. The facts consumed
// are exported for each kind its filters name.
func zeroConsumerCounters(cfg ConsumerConfig) {
	consumer := cfg.Name
	metrics.Redeliveries.WithLabelValues(consumer).Add(0)
	metrics.DeadLetters.WithLabelValues(consumer).Add(0)
	for _, cause := range infraCauses {
		metrics.InfraRetries.WithLabelValues(consumer, cause).Add(0)
	}
	for _, k := range events.Kinds() {
		if slices.Contains(cfg.Filters, events.KindFilter(k)) {
			metrics.FactsConsumed.WithLabelValues(consumer, string(k)).Add(0)
		}
	}
}

// asStored is a delivered message in the form a direct get of it returns:
// its stored headers, with its sequence and subject as headers.
func asStored(m jetstream.Msg, seq uint64) *nats.Msg {
	h := nats.Header{}
	for k, vs := range m.Headers() {
		h[k] = vs
	}
	h.Set(jetstream.SequenceHeader, strconv.FormatUint(seq, 10))
	h.Set(jetstream.SubjectHeader, m.Subject())
	return &nats.Msg{Subject: m.Subject(), Header: h, Data: m.Data()}
}

// sameAckWait refuses to join a durable consumer with a shorter ack wait
// than the one its working instances use. The server applies the
// consumer's one ack wait to every instance, while each heartbeats its
// deliveries every third of its own: a shorter one set under them would
// have their work redelivered to others while they still do it (a run
// taken over, and given up after MaxDeliver). A longer one is only
// warned of (a process attached to a store joins its serve's consumers
// with the default). An instance works when it has a pull waiting, or holds
// deliveries and the consumer delivered within the current ack wait (a
// fleet that died leaves its deliveries unacknowledged, and must not keep
// its successors from changing the setting for ever).
func (b *Bus) sameAckWait(ctx context.Context, cfg ConsumerConfig) error {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	c, err := b.js.Consumer(actx, FactsStream, cfg.Name)
	if err != nil {
		// Missing, or not readable now: the create that follows makes it
		// or reports why it cannot.
		return nil
	}
	info := c.CachedInfo()
	have := info.Config.AckWait
	if have == 0 || have == cfg.AckWait {
		return nil
	}
	if cfg.AckWait > have {
		// Longer is safe for the working instances: their heartbeats come
		// sooner than needed and their fence windows (docs/resume.md)
		// assume less time than they have. A dead instance's work waits
		// longer for another, which is worth saying.
		b.log.Warn("lengthening a consumer's ack wait under the instances working on it: a dead instance's work now waits this long before another takes it; give every instance the same --ack-wait",
			"consumer", cfg.Name, "from", have, "to", cfg.AckWait)
		return nil
	}
	recent := info.Delivered.Last != nil && time.Since(*info.Delivered.Last) < have
	if info.NumWaiting == 0 && (info.NumAckPending == 0 || !recent) {
		b.log.Warn("changing a consumer's ack wait: every instance of the service must use the new one",
			"consumer", cfg.Name, "from", have, "to", cfg.AckWait)
		return nil
	}
	return fmt.Errorf("consumer %s has ack wait %s, set by the instances working on it now (%d pulls waiting, %d deliveries unacknowledged); "+
		"this one's ack wait %s would change it under them, and their heartbeats (every %s) would no longer keep their work: "+
		"give every instance of the service the same --ack-wait (to change it, stop them all, then start again once %s have passed)",
		cfg.Name, have, info.NumWaiting, info.NumAckPending, cfg.AckWait, have/3, have)
}

// followPending sets the consumer's lag gauge from the server every third
// of the ack wait (at most 10 s) until ctx ends. A delivery sets it too,
// but an instance whose workers are all held by long work gets none for
// as long as the work runs: its gauge would keep the lag of its last
// delivery, hiding a backlog that grows behind it, or holding up one
// that other instances have drained since.
func (b *Bus) followPending(ctx context.Context, cfg ConsumerConfig) {
	tick := time.NewTicker(min(cfg.AckWait/3, 10*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !b.nc.IsConnected() {
			continue
		}
		actx, cancel := apiCtx(ctx)
		c, err := b.js.Consumer(actx, FactsStream, cfg.Name)
		cancel()
		if err != nil {
			// Missing while the pull loop makes it again, or the server
			// is away: the next tick asks again.
			b.log.Debug("consumer lag not read", "consumer", cfg.Name, "err", err)
			continue
		}
		metrics.ConsumerPending.WithLabelValues(cfg.Name).Set(float64(c.CachedInfo().NumPending))
	}
}
