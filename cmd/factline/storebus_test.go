package main

import (
	"context"
	"testing"

	"github.com/factline/factline/bus"
)

// openStoreBus starts the store's server for the caller alone (no other
// process may hold it) and returns a bus on it, and what shuts both down:
// the caller calls it before a factline process opens the same store.
func openStoreBus(ctx context.Context, t *testing.T, store string) (*bus.Bus, func()) {
	t.Helper()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: store, Durability: bus.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		t.Fatal(err)
	}
	done := func() { nc.Close(); srv.Shutdown() }
	b, err := bus.Open(ctx, nc, bus.Config{})
	if err != nil {
		done()
		t.Fatal(err)
	}
	return b, done
}
