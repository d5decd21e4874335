package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A fleet started with its defaults runs all five services: a suite is
// reported only when the meter requested its run, a runner drove it, the
// staller and the decider ended it and the grader graded it. Each fact
// is written by the instance its service's options named.
func TestAFleetRunsASuiteToItsReport(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	f, err := fleet.Start(ctx, b, fleet.Options{
		Per: map[string][]kit.Option{
			fleet.Runner: {runner.WithWorkDir(t.TempDir())},
			fleet.Grader: {grader.WithWorkDir(t.TempDir())},
		},
		Instance: func(service string, i int, _ *bus.Bus) []kit.Option {
			return []kit.Option{kit.WithInstance(fmt.Sprintf("%s-%d", service, i))}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleettest.SubmitFile(ctx, b, filepath.Join("testdata", "suite.yaml"), "fleet-test"); err != nil {
		t.Fatal(err)
	}
	err = fleettest.Await(ctx, b, "fleet", events.SuiteScope, func(log bus.RunLog) bool {
		return slices.ContainsFunc(log.Records, func(r bus.Record) bool { _, ok := r.Fact.Body.(events.SuiteReported); return ok })
	})
	if err != nil {
		t.Fatalf("the suite was never reported: %v", err)
	}
	if err := f.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	var facts []events.Fact
	for _, run := range []string{events.SuiteScope, "fix-sum-stall-on-t1"} {
		log, err := b.LoadRun(ctx, "fleet", run)
		if err != nil {
			t.Fatal(err)
		}
		facts = append(facts, log.Facts()...)
	}
	writers := map[events.Owner]bool{}
	for _, fact := range facts {
		p := fact.Producer
		if p.Instance == "fleet-test" {
			continue // the submitter
		}
		writers[p.Service] = true
		if p.Instance != string(p.Service)+"-0" {
			t.Errorf("%s written by %s/%s, want the instance named %s-0", fact.Kind(), p.Service, p.Instance, p.Service)
		}
	}
	for _, o := range []events.Owner{events.OwnerRunner, events.OwnerStaller, events.OwnerDecider, events.OwnerGrader, events.OwnerMeter} {
		if !writers[o] {
			t.Errorf("no fact of the %s (writers: %v)", o, writers)
		}
	}
}

func TestStartRefusesAnUnknownService(t *testing.T) {
	b, _ := bustest.Start(t)
	for _, o := range []fleet.Options{
		{Services: []string{fleet.Staller, "stallr"}},
		{Per: map[string][]kit.Option{"stallr": {kit.WithWorkers(2)}}},
		{Workers: map[string]int{"stallr": 2}},
	} {
		_, err := fleet.Start(testCtx(t), b, o)
		if !errors.Is(err, fleet.ErrUnknownService) || !strings.Contains(err.Error(), `"stallr"`) {
			t.Errorf("err = %v, want the unknown service named", err)
		}
	}
}

func TestStartRefusesAServiceNamedTwice(t *testing.T) {
	b, _ := bustest.Start(t)
	_, err := fleet.Start(testCtx(t), b, fleet.Options{Services: []string{fleet.Meter, fleet.Staller, fleet.Meter}})
	if err == nil || !strings.Contains(err.Error(), "meter is named twice") {
		t.Fatalf("err = %v", err)
	}
}

func TestStartRefusesFewerThanOneWorker(t *testing.T) {
	b, _ := bustest.Start(t)
	for _, w := range []int{0, -3} {
		_, err := fleet.Start(testCtx(t), b, fleet.Options{Workers: map[string]int{fleet.Decider: w}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d workers for decider", w)) {
			t.Errorf("err = %v, want %d workers for the decider refused", err, w)
		}
	}
}

func TestStartRefusesNegativeInstances(t *testing.T) {
	b, _ := bustest.Start(t)
	if _, err := fleet.Start(testCtx(t), b, fleet.Options{Instances: -1}); err == nil {
		t.Fatal("a fleet of -1 instances started")
	}
}

// Nothing runs unless every instance could be configured: a bad option of
// the last service configured leaves the others' consumers unmade.
func TestABadOptionStartsNothing(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	_, err := fleet.Start(ctx, b, fleet.Options{Per: map[string][]kit.Option{fleet.Staller: {kit.WithSuiteCache(8)}}})
	var oe *kit.OptionError
	if !errors.As(err, &oe) || oe.Service != events.OwnerStaller || oe.Option != "WithSuiteCache" {
		t.Fatalf("err = %v, want the staller's WithSuiteCache refused", err)
	}
	time.Sleep(200 * time.Millisecond) // a consumer that was started would have been made by now
	for _, name := range fleet.Names() {
		if _, err := b.JetStream().Consumer(ctx, bus.FactsStream, name); !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Errorf("consumer %s: %v, want none made", name, err)
		}
	}
}

// Every instance works on the bus Connect opened for it, and Instance
// configures it knowing that bus.
func TestEveryInstanceHasItsOwnBus(t *testing.T) {
	ctx := testCtx(t)
	b, srv := bustest.Start(t)
	var mu sync.Mutex
	opened := map[string]*bus.Bus{}
	var configured []string
	f, err := fleet.Start(ctx, nil, fleet.Options{
		Services:  []string{fleet.Staller, fleet.Meter},
		Instances: 2,
		Connect: func(service string, i int) (*bus.Bus, error) {
			mu.Lock()
			defer mu.Unlock()
			on := bustest.OpenWith(t, srv, bus.Config{})
			opened[fmt.Sprintf("%s-%d", service, i)] = on
			return on, nil
		},
		Instance: func(service string, i int, on *bus.Bus) []kit.Option {
			mu.Lock()
			defer mu.Unlock()
			name := fmt.Sprintf("%s-%d", service, i)
			if opened[name] != on {
				t.Errorf("%s configured on a bus Connect did not open for it", name)
			}
			configured = append(configured, name)
			return []kit.Option{kit.WithInstance(name)}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	slices.Sort(configured)
	if want := []string{"meter-0", "meter-1", "staller-0", "staller-1"}; !slices.Equal(configured, want) {
		t.Errorf("configured %v, want %v", configured, want)
	}
	for _, name := range []string{fleet.Staller, fleet.Meter} {
		waitConsumer(t, ctx, b, name)
	}
	if err := f.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
}

func TestAFailedConnectStartsNothing(t *testing.T) {
	cause := errors.New("no route to the server")
	_, err := fleet.Start(testCtx(t), nil, fleet.Options{Connect: func(string, int) (*bus.Bus, error) { return nil, cause }})
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the connect error", err)
	}
}

// A service that fails is reported by Wait, naming it; the others stop
// cleanly.
func TestWaitReportsTheServiceThatFailed(t *testing.T) {
	ctx := testCtx(t)
	b, srv := bustest.Start(t)
	closed := bustest.OpenWith(t, srv, bus.Config{})
	closed.Conn().Close()
	f, err := fleet.Start(ctx, b, fleet.Options{
		Services: []string{fleet.Staller, fleet.Decider},
		Connect: func(service string, _ int) (*bus.Bus, error) {
			if service == fleet.Decider {
				return closed, nil
			}
			return b, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitConsumer(t, ctx, b, fleet.Staller)
	err = f.Stop()
	if err == nil || !strings.HasPrefix(err.Error(), "decider: ") || strings.Contains(err.Error(), "staller") {
		t.Fatalf("err = %v, want the decider's failure alone", err)
	}
}

func waitConsumer(t *testing.T, ctx context.Context, b *bus.Bus, name string) {
	t.Helper()
	for {
		if _, err := b.JetStream().Consumer(ctx, bus.FactsStream, name); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("consumer %s was never made", name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
