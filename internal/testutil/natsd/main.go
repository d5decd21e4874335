// Command natsd serves factline's embedded JetStream server
// (bus.StartEmbedded) as a process of its own, for tests that need a
// server outside the test process: one they SIGTERM or SIGKILL and start
// again on the same store, or one whose memory must not count as the
// test's. It is what `nats-server -js -sd DIR` is in a deployment.
//
// Tests build it with testutil.NatsdBinary. It is built without the race
// detector, unlike the test binary that used to serve this role: the
// server is not the code under test there, and instrumented it took most
// of those tests' CPU.
//
// Usage:
//
//	natsd -store DIR -listen HOST:PORT [-fsync interval|always]
//
// It prints "natsd listening on HOST:PORT, store DIR" on standard output
// once it accepts clients, and shuts down (flushing its store) on SIGTERM
// or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/factline/factline/bus"
)

func main() {
	store := flag.String("store", "", "the store directory")
	listen := flag.String("listen", "", "the client address, HOST:PORT")
	fsync := flag.String("fsync", string(bus.SyncInterval), "when the store fsyncs: always or interval")
	flag.Parse()
	if *store == "" || *listen == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: natsd -store DIR -listen HOST:PORT [-fsync interval|always]")
		os.Exit(2)
	}
	durability, err := bus.ParseDurability(*fsync)
	if err != nil {
		fmt.Fprintf(os.Stderr, "natsd: -fsync: %v\n", err)
		os.Exit(2)
	}
	// Signals are caught before the server starts: a test may stop a
	// server that has not yet said it listens.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: *store, Listen: *listen, Durability: durability})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "natsd: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("natsd listening on %s, store %s\n", *listen, *store)
	<-sigs
	srv.Shutdown()
}
