// Package bustest starts real embedded JetStream servers for tests and
// benchmarks, and makes valid facts to put on them.
package bustest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// Start runs an embedded JetStream server in a temporary directory (fsync on
// an interval: tests measure behaviour, not durability) and opens a Bus on an
// in-process connection. Everything is torn down when the test ends.
func Start(tb testing.TB) (*bus.Bus, *bus.Embedded) {
	tb.Helper()
	return StartWith(tb, bus.EmbeddedConfig{Durability: bus.SyncInterval})
}

// StartWith is Start with a chosen server configuration; StoreDir defaults
// to a temporary directory.
func StartWith(tb testing.TB, cfg bus.EmbeddedConfig) (*bus.Bus, *bus.Embedded) {
	tb.Helper()
	srv := Server(tb, cfg)
	return OpenWith(tb, srv, bus.Config{}), srv
}

// Server starts an embedded server without opening the bus on it, for tests
// that need the streams created with particular settings.
func Server(tb testing.TB, cfg bus.EmbeddedConfig) *bus.Embedded {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cfg.StoreDir == "" {
		cfg.StoreDir = tb.TempDir()
	}
	if cfg.Durability == "" {
		cfg.Durability = bus.SyncInterval
	}
	srv, err := bus.StartEmbedded(ctx, cfg)
	if err != nil {
		tb.Fatalf("start embedded server: %v", err)
	}
	tb.Cleanup(srv.Shutdown)
	return srv
}

// OpenWith opens a bus with the given settings on a new in-process
// connection to srv.
func OpenWith(tb testing.TB, srv *bus.Embedded, cfg bus.Config) *bus.Bus {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := srv.Connect()
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	b, err := bus.Open(ctx, nc, cfg)
	if err != nil {
		tb.Fatalf("open bus: %v", err)
	}
	return b
}

// Claim returns a valid run.claimed fact at the given position: a small,
// realistic fact for tests that need many.
func Claim(tb testing.TB, suite, run string, pos uint64) events.Fact {
	tb.Helper()
	f, err := events.NewFact(events.Meta{
		Suite: suite, Run: run, TaskGeneration: 1, Position: pos,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "test-runner"},
	}, events.RunClaimed{Runner: "test-runner", Lease: uint32(pos)})
	if err != nil {
		tb.Fatalf("make fact: %v", err)
	}
	return f
}

// Turn returns a valid turn.completed fact for turn n at position pos, with
// one executed, applied, verified dispatch: the size of a typical fact.
func Turn(tb testing.TB, suite, run string, pos uint64, n uint32) events.Fact {
	tb.Helper()
	f, err := events.NewFact(events.Meta{
		Suite: suite, Run: run, TaskGeneration: 1, Position: pos,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "test-runner"},
	}, events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: run, TaskGeneration: 1, Turn: n, EvidencePosition: pos,
		ActorIntent: events.Continue(),
		Dispatches: []events.CompletedDispatch{{
			CallID:       events.CallID(fmt.Sprintf("call-%d", n)),
			EvidenceRef:  events.EvidenceRef(fmt.Sprintf("%s/call-%d", run, n)),
			Disposition:  events.DispositionExecuted,
			Mutation:     events.MutationApplied,
			Verification: events.Failed(uint64(n), true, events.Diagnostic{Message: "expected 2, got 3", File: "calc.go", Line: 12}),
		}},
	}})
	if err != nil {
		tb.Fatalf("make fact: %v", err)
	}
	return f
}

// Drained waits until the durable consumer name on FACTS has handled every
// message it was given (none pending, none awaiting an ack): after it, a
// service has answered every fact committed before the call, so a test can
// assert what it did not append. The deadline only guards against a hang.
func Drained(tb testing.TB, ctx context.Context, b *bus.Bus, name string) {
	tb.Helper()
	waitConsumer(tb, ctx, b, name, "drained", func(info *jetstream.ConsumerInfo) bool {
		return info.NumPending == 0 && info.NumAckPending == 0 && info.NumRedelivered == 0
	})
}

// waitConsumer waits until the durable consumer name on FACTS is as ok
// says, failing the test after a minute: the deadline only guards
// against a hang.
func waitConsumer(tb testing.TB, ctx context.Context, b *bus.Bus, name, what string, ok func(*jetstream.ConsumerInfo) bool) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := b.JetStream().Consumer(ctx, bus.FactsStream, name)
		if err == nil {
			info, err := c.Info(ctx)
			if err == nil && ok(info) {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("consumer %s never %s", name, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
