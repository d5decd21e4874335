package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/internal/sleep"
)

// controlConfig is the CONTROL stream: control signals and live status.
//
// It is stored on file with a short MaxAge, not in memory, because a
// memory stream does not outlive its server: a restart deleted the stream
// itself, every runner's control watch failed, and under the shipped
// roles, where no service may create streams, nothing worked again until
// an administrator ran factline setup. On file it survives restarts (and,
// replicated, rolling restarts of a cluster), so a cancel sent just
// before a restart still arrives. Nothing in it is needed to rebuild
// anything (an accepted control is a fact in FACTS), so on a single
// server it is flushed asynchronously, without the fsync before every
// acknowledgement that FACTS gets. See docs/operations.md.
func (b *Bus) controlConfig() jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:        ControlStream,
		Description: "factline control signals and live status; short-lived",
		Subjects:    []string{"ctl.>", "status.>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Replicas:    b.cfg.Replicas,
		MaxAge:      b.cfg.ControlMaxAge,
		Duplicates:  min(b.cfg.DedupWindow, b.cfg.ControlMaxAge),
		AllowDirect: true,
		// Only the newest status per run matters.
		MaxMsgsPerSubject: 1000,
	}
	if b.cfg.Replicas <= 1 {
		// JetStream allows asynchronous flushing only on unreplicated streams.
		cfg.PersistMode = jetstream.AsyncPersistMode
	}
	return cfg
}

// legacyControl reports whether an existing CONTROL differs from what
// controlConfig asks only in being kept in memory, as factline made it
// before. It is used as it is (it may vanish on a restart, and is then
// made again on file) rather than refused.
func legacyControl(have, want jetstream.StreamConfig) bool {
	return want.Name == ControlStream && have.Storage == jetstream.MemoryStorage && want.Storage == jetstream.FileStorage
}

// goKeep starts the stream keeper; tests delay it.
var goKeep = func(f func()) { go f() }

// keepStreams ensures the streams again each time the connection comes
// back (a restarted server may have lost what it kept in memory) and
// whenever a user of the bus found one missing (wantStreams), until the
// connection closes or the bus does. ch carries the connection's CONNECTED and CLOSED
// events.
func (b *Bus) keepStreams(ch chan nats.Status) {
	defer b.nc.RemoveStatusListener(ch)
	if b.nc.IsClosed() {
		return
	}
	// While a stream is missing, it is looked for again now and then, so
	// that health clears once an operator has made it again even if no
	// watch or consumer asks.
	recheck := time.NewTicker(missingRecheck)
	defer recheck.Stop()
	for {
		select {
		case st := <-ch:
			if st == nats.CLOSED {
				return
			}
		case <-b.closed:
			return
		case <-b.kick:
		case <-recheck.C:
			b.health.mu.Lock()
			missing := len(b.health.missing) > 0
			b.health.mu.Unlock()
			if !missing {
				continue
			}
		}
		b.reensure()
	}
}

// missingRecheck is how often a missing stream is looked for again.
const missingRecheck = 10 * time.Second

// remakeTimeout bounds making CONTROL again. A server that refuses the
// request (a role that may not manage streams) never answers it; a
// healthy one answers in milliseconds.
const remakeTimeout = 5 * time.Second

// wantStreams asks keepStreams to look at the streams again, without
// waiting for it: a consumer or a watch found one missing.
func (b *Bus) wantStreams() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// reensureTimeout bounds one pass of reensure; a pass that found the
// server still recovering is followed by another on the next kick.
const reensureTimeout = time.Minute

// reensure looks every stream up again. CONTROL, which may vanish by
// design, is made again when it is missing, if this connection may. FACTS
// and DEAD are never made again here: missing after a reconnect, they were
// lost, and an empty stream in their place would hide the loss; they are
// reported (Health, factline_bus_stream_missing) for an operator.
func (b *Bus) reensure() {
	ctx, cancel := context.WithTimeout(context.Background(), reensureTimeout)
	defer cancel()
	for _, want := range b.streamConfigs() {
		for try := 0; ; try++ {
			err := b.lookOrMake(ctx, want)
			if err == nil || !Transient(err) || ctx.Err() != nil {
				b.noteStream(want.Name, err)
				break
			}
			// Not answered yet: a server that just came back may still be
			// recovering its streams.
			if sleep.For(ctx, infraBackoff(try)) != nil || b.nc.IsClosed() {
				return
			}
		}
	}
}

// lookOrMake looks a stream up and, for CONTROL only, creates it when it is
// missing. A stream that exists with other settings is left alone: Open
// already told the operator.
func (b *Bus) lookOrMake(ctx context.Context, want jetstream.StreamConfig) error {
	actx, cancel := apiCtx(ctx)
	_, err := b.js.Stream(actx, want.Name)
	cancel()
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("look up stream %s: %w", want.Name, err)
	case want.Name != ControlStream:
		return fmt.Errorf("stream %s is gone; factline does not make it again by itself, since an empty %s would hide what was lost (restore it, or run factline setup to start an empty one)", want.Name, want.Name)
	}
	cctx, cancel := context.WithTimeout(ctx, remakeTimeout)
	defer cancel()
	if _, err := b.js.CreateStream(cctx, want); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("make stream %s again: %w", want.Name, createErr(ctx, "stream "+want.Name, err))
	}
	b.log.Warn("stream was missing and is made again", "stream", want.Name)
	return nil
}
