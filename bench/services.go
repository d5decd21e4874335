package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/staller"
)

// serviceNames are the five services, in the order `factline serve` lists
// them.
var serviceNames = []string{"decider", "grader", "meter", "runner", "staller"}

// startServices runs the five services in this process, wired as `factline
// run` and `factline serve` wire them (default options), talking only
// through the bus. The runner drives up to concurrency runs at once.
func startServices(ctx context.Context, b *bus.Bus, concurrency int, workDir string, logger *slog.Logger) (stop func() error, err error) {
	quiet := logger
	if quiet == nil {
		quiet = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	rn, err := runner.New(b, kit.WithWorkers(max(concurrency, 1)), runner.WithWorkDir(workDir), kit.WithLogger(quiet))
	if err != nil {
		return nil, err
	}
	st, err := staller.New(b, kit.WithLogger(quiet))
	if err != nil {
		return nil, err
	}
	de, err := decider.New(b, kit.WithLogger(quiet))
	if err != nil {
		return nil, err
	}
	gr, err := grader.New(b, kit.WithLogger(quiet))
	if err != nil {
		return nil, err
	}
	me, err := meter.New(b, kit.WithLogger(quiet))
	if err != nil {
		return nil, err
	}
	runs := map[string]func(context.Context) error{
		"runner":  rn.Run,
		"staller": st.Run,
		"decider": de.Run,
		"grader":  gr.Run,
		"meter":   me.Run,
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for name, run := range runs {
		wg.Go(func() {
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				quiet.Error("service stopped", "service", name, "err", err)
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				mu.Unlock()
			}
		})
	}
	return func() error {
		cancel()
		wg.Wait()
		return errors.Join(errs...)
	}, nil
}
