package bustest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
)

// Restartable is an embedded server on a fixed loopback port that a test
// stops and starts again on the same store, as an operator restarts
// nats-server.
type Restartable struct {
	tb testing.TB
	// Config is the server's: its Listen address stays the same across
	// restarts.
	Config bus.EmbeddedConfig
	// Server is the running server (the new one after a restart).
	Server *bus.Embedded
}

// StartRestartable starts a Restartable on a free loopback port; it is
// shut down when the test ends.
func StartRestartable(tb testing.TB) *Restartable {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := &Restartable{tb: tb, Config: bus.EmbeddedConfig{StoreDir: tb.TempDir(), Durability: bus.SyncInterval, Listen: addr}}
	r.Start()
	tb.Cleanup(func() { r.Server.Shutdown() })
	return r
}

// Start starts the server (again) on its store and address.
func (r *Restartable) Start() {
	r.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := bus.StartEmbedded(ctx, r.Config)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.Server = srv
}

// Restart stops the server and starts it again.
func (r *Restartable) Restart() {
	r.tb.Helper()
	r.Server.Shutdown()
	r.Start()
}

// Dial opens a bus on the server over TCP, reconnecting quickly; it is
// closed when the test ends.
func (r *Restartable) Dial(ctx context.Context) *bus.Bus {
	r.tb.Helper()
	b, err := bus.Dial(ctx, "nats://"+r.Config.Listen, bus.Config{}, nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		r.tb.Fatal(err)
	}
	r.tb.Cleanup(b.Conn().Close)
	return b
}
