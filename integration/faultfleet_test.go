package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/services/decider"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/services/staller"
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
}

// startFleetIn runs the services until ctx ends; the test waits for them
// to stop before it ends.
func startFleetIn(t *testing.T, ctx context.Context, spec fleetSpec) {
	t.Helper()
	consumer := bus.ConsumerConfig{AckWait: spec.ackWait}
	var runs []func(context.Context) error
	for i := range spec.copies {
		if !spec.noRunner {
			rn, err := runner.New(spec.connect(), runner.WithWorkspaces(runner.StoredWorkspaces{Blobs: spec.connect()}),
				runner.WithWorkDir(t.TempDir()), kit.WithWorkers(4), kit.WithAckWait(spec.ackWait),
				kit.WithInstance(fmt.Sprintf("runner-%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, rn.Run)
		}
		runs = append(runs,
			kittest.Must(staller.New(spec.connect(), kit.WithInstance(fmt.Sprintf("staller-%d", i)), kit.WithConsumer(consumer))).Run,
			kittest.Must(decider.New(spec.connect(), kit.WithInstance(fmt.Sprintf("decider-%d", i)), kit.WithConsumer(consumer))).Run,
			kittest.Must(grader.New(spec.connect(), kit.WithInstance(fmt.Sprintf("grader-%d", i)), grader.WithWorkDir(t.TempDir()),
				kit.WithConsumer(consumer))).Run,
			kittest.Must(meter.New(spec.connect(), kit.WithInstance(fmt.Sprintf("meter-%d", i)), kit.WithConsumer(consumer))).Run)
	}
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() { _ = run(ctx) })
	}
	t.Cleanup(wg.Wait)
}

var (
	baselineOnce sync.Once
	baselineOut  suiteOutcome
	baselineErr  string
)

// faultTrials is how many trials of each case and treatment the fault
// suite runs: 8 cases × 2 treatments × 2 trials = 32 runs per test.
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
