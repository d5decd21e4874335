package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// Close gives back what the bus took on the caller's connection (the
// subscription its direct gets share; what nats.go keeps for requests
// stays) and leaves the connection, which the caller owns, open; a second
// Close changes nothing.
func TestCloseLeavesTheCallersConnectionAsItFoundIt(t *testing.T) {
	srv := bustest.Server(t, bus.EmbeddedConfig{StoreDir: t.TempDir()})
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, nc, bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.LoadRun(ctx, "s", "r"); err != nil {
		t.Fatal(err)
	}
	during := nc.NumSubscriptions()
	b.Close()
	b.Close()
	if got := nc.NumSubscriptions(); got != during-1 {
		t.Errorf("after Close the connection holds %d subscriptions, %d before", got, during)
	}

	if nc.IsClosed() {
		t.Error("Close closed a connection the caller owns")
	}
}

// A bus Dial made owns its connection: Close closes it.
func TestCloseClosesTheConnectionDialMade(t *testing.T) {
	srv := bustest.Server(t, bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bus.Dial(ctx, srv.ClientURL(), bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if !b.Conn().IsClosed() {
		t.Error("Close left open the connection Dial made")
	}
}
