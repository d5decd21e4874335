package bench

import (
	"context"
	"log/slog"
	"os"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// serviceNames are the five services, in the order `factline serve` lists
// them.
var serviceNames = fleet.Names()

// startServices runs the five services in this process, wired as `factline
// run` and `factline serve` wire them (through the fleet, default
// options), talking only through the bus: instances of each, the runners
// driving up to concurrency runs at once between them. With connect, each
// instance gets a connection of its own, closed when it stops: a stopped
// in-process runner's last on-demand pull would otherwise stay open on the
// server on the shared connection and swallow later requests until their
// ack wait.
func startServices(ctx context.Context, b *bus.Bus, concurrency, instances int, workDir string, logger *slog.Logger, connect func() (*nats.Conn, error)) (stop func() error, err error) {
	quiet := logger
	if quiet == nil {
		quiet = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	instances = max(instances, 1)
	var mu sync.Mutex
	var conns []*nats.Conn
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
	}
	o := fleet.Options{
		Instances: instances,
		Shared:    []kit.Option{kit.WithLogger(quiet)},
		Per:       map[string][]kit.Option{fleet.Runner: {runner.WithWorkDir(workDir)}},
		Workers:   map[string]int{fleet.Runner: max((concurrency+instances-1)/instances, 1)},
	}
	if connect != nil {
		o.Connect = func(string, int) (*bus.Bus, error) {
			nc, err := connect()
			if err != nil {
				return nil, err
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			return bus.Open(ctx, nc, bus.Config{Logger: quiet})
		}
	}
	f, err := fleet.Start(ctx, b, o)
	if err != nil {
		closeAll()
		return nil, err
	}
	return func() error {
		err := f.Stop()
		closeAll()
		return err
	}, nil
}
