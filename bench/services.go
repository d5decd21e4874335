package bench

import (
	"context"
	"log/slog"
	"os"

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
// options), talking only through the bus. The runner drives up to
// concurrency runs at once.
func startServices(ctx context.Context, b *bus.Bus, concurrency int, workDir string, logger *slog.Logger) (stop func() error, err error) {
	quiet := logger
	if quiet == nil {
		quiet = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	f, err := fleet.Start(ctx, b, fleet.Options{
		Shared: []kit.Option{kit.WithLogger(quiet)},
		Per:    map[string][]kit.Option{fleet.Runner: {kit.WithWorkers(max(concurrency, 1)), runner.WithWorkDir(workDir)}},
	})
	if err != nil {
		return nil, err
	}
	return f.Stop, nil
}
