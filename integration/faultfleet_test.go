package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// fleetSpec says how to run the five services in this process for a fault
// test.
type fleetSpec struct {
	// copies of every service, each on a connection of its own.
	copies int
	// connect opens a bus for one service instance (its own connection).
	connect func() *bus.Bus
	// ackWait of every consumer: short, so that a lost delivery comes back
	// within the test's time.
	ackWait time.Duration
	// noRunner leaves the runners out (they run as processes).
	noRunner bool
	// noGrader leaves the graders out (they run as processes).
	noGrader bool
}

// startFleetIn runs the services until ctx ends; the test waits for them
// to stop before it ends.
func startFleetIn(t *testing.T, ctx context.Context, spec fleetSpec) {
	t.Helper()
	services := fleet.Names()
	if spec.noRunner {
		services = slices.DeleteFunc(services, func(s string) bool { return s == fleet.Runner })
	}
	if spec.noGrader {
		services = slices.DeleteFunc(services, func(s string) bool { return s == fleet.Grader })
	}
	f, err := fleet.Start(ctx, nil, fleet.Options{
		Services:  services,
		Instances: spec.copies,
		Connect:   func(string, int) (*bus.Bus, error) { return spec.connect(), nil },
		Shared:    []kit.Option{kit.WithConsumer(bus.ConsumerConfig{AckWait: spec.ackWait})},
		Per:       map[string][]kit.Option{fleet.Runner: {kit.WithWorkers(4)}},
		Instance: func(service string, i int, _ *bus.Bus) []kit.Option {
			opts := []kit.Option{kit.WithInstance(fmt.Sprintf("%s-%d", service, i))}
			switch service {
			case fleet.Runner:
				// Its blobs on a connection of their own, as a runner
				// process's workspaces would be.
				opts = append(opts, runner.WithWorkDir(t.TempDir()), runner.WithWorkspaces(runner.StoredWorkspaces{Blobs: spec.connect().Blobs()}))
			case fleet.Grader:
				opts = append(opts, grader.WithWorkDir(t.TempDir()))
			}
			return opts
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Wait() })
}

var (
	baselineOnce sync.Once
	baselineOut  suiteOutcome
	baselineErr  string
)

// faultTrials is how many trials of each case and treatment the fault
// suite runs: 9 cases × 2 treatments × 2 trials = 36 runs per test.
const faultTrials = 2

// faultFree runs the fault suite once without faults, in this process, and
// returns what every fault test compares against.
func faultFree(t *testing.T) suiteOutcome {
	t.Helper()
	baselineOnce.Do(func() {
		ok := t.Run("fault-free", func(t *testing.T) {
			srv := startServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			theSink().reset(nil)
			startFleetIn(t, ctx, fleetSpec{copies: 1, ackWait: 5 * time.Second, connect: connector(t, srv, bus.Config{})})
			b := connector(t, srv, bus.Config{})()
			submitSuite(t, ctx, b, writeFaultSuite(t, faultTrials))
			baselineOut = awaitReported(t, ctx, b, "demo", nil)
			cancel()
		})
		if !ok {
			baselineErr = "the fault-free run of the fault suite failed"
		}
	})
	if baselineErr != "" {
		t.Fatal(baselineErr)
	}
	return baselineOut
}

// startServer starts an embedded server that also listens on loopback, so
// that service processes can connect to it.
func startServer(t *testing.T) *bus.Embedded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: t.TempDir(), Durability: bus.SyncInterval, Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// connector opens a new connection and bus on srv each time it is called.
func connector(t *testing.T, srv *bus.Embedded, cfg bus.Config) func() *bus.Bus {
	return func() *bus.Bus {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		nc, err := srv.Connect()
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(nc.Close)
		b, err := bus.Open(ctx, nc, cfg)
		if err != nil {
			t.Fatalf("open bus: %v", err)
		}
		return b
	}
}
