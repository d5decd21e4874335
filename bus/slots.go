package bus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LimitsBucket holds the model limits the fleet shares (see
// models/limit): leased concurrency slots, the tokens of each limit's
// one-minute request window and each limit's adaptive state.
const LimitsBucket = "LIMITS"

// limitsMarkerTTL is how long an expired slot or token leaves a marker:
// the marker is what wakes a waiter's watch, and it only needs to outlive
// that.
const limitsMarkerTTL = 10 * time.Second

// tokenTTL is a request token's life: the window of a per-minute limit.
const tokenTTL = time.Minute

// limitsConfig is the LIMITS bucket: one value per key, with per-key TTLs
// (a slot's lease, a token's minute), on file like every factline bucket.
func (b *Bus) limitsConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:         LimitsBucket,
		Description:    "factline model limits: leased slots, request tokens, adaptive state",
		Storage:        jetstream.FileStorage,
		Replicas:       b.cfg.Replicas,
		History:        1,
		LimitMarkerTTL: limitsMarkerTTL,
	}
}

// Limits is the LIMITS bucket as the limit.Store the runners share. Every
// read and write is bounded like any API request, whatever the caller's
// deadline: an answer lost with a stream leader fails the call with a
// transient error, which hands the run back, instead of holding it. Slots
// are keys <limit>.c.<i> created with a TTL of their lease (create fails
// while another holder's key lives), renewed with a compare-and-set that
// sets the TTL again, and deleted on release; a holder that dies stops
// renewing, and the server removes its key when the lease runs out.
// Tokens are keys <limit>.r.<i> that live one minute: at most n of them
// exist at once, which is at most n requests in any minute. The adaptive
// state is <limit>.state.
type Limits struct {
	kv jetstream.KeyValue
	js jetstream.JetStream
}

// Limits returns the bus's limit store.
func (b *Bus) Limits() *Limits { return &Limits{kv: b.limits, js: b.js} }

// TakeSlot implements limit.Store.
func (l *Limits) TakeSlot(ctx context.Context, key string, n int, holder string, lease time.Duration) (*Slot, bool, error) {
	k, rev, ok, err := l.takeFree(ctx, key+".c", n, holder, lease)
	if err != nil || !ok {
		return nil, false, err
	}
	return &Slot{kv: l.kv, js: l.js, key: k, holder: holder, lease: lease, rev: rev}, true, nil
}

// TakeToken implements limit.Store.
func (l *Limits) TakeToken(ctx context.Context, key string, n int, holder string) (bool, error) {
	_, _, ok, err := l.takeFree(ctx, key+".r", n, holder, tokenTTL)
	return ok, err
}

// takeFree creates one of the keys prefix.0..prefix.n-1 that does not
// exist, trying the free ones in a random order so that many takers
// rarely collide.
func (l *Limits) takeFree(ctx context.Context, prefix string, n int, holder string, ttl time.Duration) (string, uint64, bool, error) {
	held, err := l.held(ctx, prefix)
	if err != nil {
		return "", 0, false, err
	}
	free := make([]int, 0, n)
	for i := range n {
		if !held[i] {
			free = append(free, i)
		}
	}
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	for _, i := range free {
		k := prefix + "." + strconv.Itoa(i)
		actx, cancel := apiCtx(ctx)
		rev, err := l.kv.Create(actx, k, []byte(holder), jetstream.KeyTTL(ttl))
		cancel()
		switch {
		case err == nil:
			return k, rev, true, nil
		case kvConflict(err):
			continue // taken since the listing
		default:
			return "", 0, false, fmt.Errorf("take %s: %w", k, err)
		}
	}
	return "", 0, false, nil
}

// held lists the indexes of prefix's keys that exist now.
func (l *Limits) held(ctx context.Context, prefix string) (map[int]bool, error) {
	// Listing is a short-lived watch: bounded like any API request, so
	// that lost answers fail it instead of keeping it waiting.
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	lister, err := l.kv.ListKeysFiltered(ctx, prefix+".*")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	defer func() { _ = lister.Stop() }()
	held := map[int]bool{}
	for k := range lister.Keys() {
		if i, err := strconv.Atoi(k[strings.LastIndexByte(k, '.')+1:]); err == nil {
			held[i] = true
		}
	}
	return held, nil
}

// LoadState implements limit.Store.
func (l *Limits) LoadState(ctx context.Context, key string) ([]byte, uint64, error) {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	e, err := l.kv.Get(ctx, key+".state")
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("load %s.state: %w", key, err)
	}
	return e.Value(), e.Revision(), nil
}

// SaveState implements limit.Store.
func (l *Limits) SaveState(ctx context.Context, key string, data []byte, rev uint64) (bool, error) {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	var err error
	if rev == 0 {
		_, err = l.kv.Create(ctx, key+".state", data)
	} else {
		_, err = l.kv.Update(ctx, key+".state", data, rev)
	}
	switch {
	case err == nil:
		return true, nil
	case kvConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("save %s.state: %w", key, err)
}

// Watch implements limit.Store: any new value, deletion or expiry marker
// under the limit's keys signals.
func (l *Limits) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	// The watch lives as long as ctx, but making it is one API request
	// (a consumer) that waits for its answer as long as its context lets
	// it: an answer lost with a restarting node would keep the run
	// waiting for a slot for good. The making gets the bound of any API
	// request; past it the watch is abandoned with a deadline error, which
	// hands the run back to be tried again.
	bound := time.AfterFunc(replyTimeout, cancel)
	w, err := l.kv.Watch(ctx, key+".>", jetstream.UpdatesOnly(), jetstream.MetaOnly())
	if !bound.Stop() {
		if err == nil {
			_ = w.Stop()
		}
		cancel()
		return nil, nil, fmt.Errorf("watch %s: making the watch outlived %s: %w", key, replyTimeout, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("watch %s: %w", key, err)
	}
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.Updates():
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, func() { _ = w.Stop(); cancel(); <-done }, nil
}

// Slot is a held slot of a limit.
type Slot struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	key    string
	holder string
	lease  time.Duration
	rev    uint64
}

// Renew implements limit.Slot: the slot's key is written again with a
// fresh TTL, only if it is still the holder's revision.
func (s *Slot) Renew(ctx context.Context) error {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	rev, err := publishTTL(ctx, s.js, s.kv.Bucket(), s.key, []byte(s.holder), s.rev, s.lease)
	if err != nil {
		return fmt.Errorf("renew %s: %w", s.key, err)
	}
	s.rev = rev
	return nil
}

// Release implements limit.Slot: the key is deleted if it is still the
// holder's; one that expired and was taken again is left to its holder.
func (s *Slot) Release(ctx context.Context) error {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	err := s.kv.Delete(ctx, s.key, jetstream.LastRevision(s.rev))
	if kvConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", s.key, err)
	}
	return nil
}

// kvConflict reports whether a conditional key-value write lost to another
// writer. The client maps a standalone server's answer to ErrKeyExists or
// ErrKeyRevisionMismatch, but a replicated bucket answers with another code
// (10164) that it passes on as it is when a create retries over a deleted
// or expired key: on a cluster, a slot taken in that instant would
// otherwise fail the run that wanted it.
func kvConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isConflict(err)
}

// publishTTL writes key with a TTL if its revision is still rev. The KV
// API sets a TTL only on create, so the renewal is the same write made on
// the bucket's subject directly.
func publishTTL(ctx context.Context, js jetstream.JetStream, bucket, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	msg := &nats.Msg{Subject: "$KV." + bucket + "." + key, Data: value, Header: nats.Header{}}
	ack, err := js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
	if err != nil {
		return 0, serverError(err)
	}
	return ack.Sequence, nil
}
