package sandbox

import (
	"context"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/factline/factline/events"
)

// probeSerial makes each test's configuration one no other test (nor an
// earlier run of the same test under -count) asked for, so that what a
// test sees of the probe cache is its own doing.
var probeSerial atomic.Uint64

// freshConfig is every process feature at testLimits but a CPU limit of
// its own, in dir.
func freshConfig(dir string) Config {
	l := testLimits
	l.CPUSeconds = 10_000 + probeSerial.Add(1)
	return Config{Limits: l, Network: true, Unprivileged: true, WorkDir: dir}
}

// commandCounter counts the probe commands run in each work dir while the
// test runs.
type commandCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func countProbeCommands(t *testing.T) *commandCounter {
	t.Helper()
	cc := &commandCounter{n: map[string]int{}}
	tap := func(_ context.Context, dir string) {
		cc.mu.Lock()
		cc.n[dir]++
		cc.mu.Unlock()
	}
	if !probeTap.CompareAndSwap(nil, &tap) {
		t.Fatal("another test taps the probe")
	}
	t.Cleanup(func() { probeTap.Store(nil) })
	return cc
}

// in is how many probe commands ran in dir so far.
func (cc *commandCounter) in(dir string) int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.n[dir]
}

func mustProbe(t *testing.T, cfg Config) *Containment {
	t.Helper()
	c, err := Probe(context.Background(), cfg)
	if err != nil {
		t.Fatalf("probe in %s: %v", cfg.WorkDir, err)
	}
	return c
}

// A second Probe with the same inputs runs no command: the host's answer
// is the first one's, and the record is the same.
func TestProbeWithTheSameInputsRunsItsCommandsOnce(t *testing.T) {
	cc := countProbeCommands(t)
	cfg := freshConfig(reachableDir(t))
	first := mustProbe(t, cfg)
	ran := cc.in(cfg.WorkDir)
	if ran < 2 {
		t.Fatalf("the first probe ran %d commands, want the plain one and at least one per asked feature", ran)
	}
	second := mustProbe(t, cfg)
	if n := cc.in(cfg.WorkDir) - ran; n != 0 {
		t.Errorf("the second probe with the same inputs ran %d commands, want none", n)
	}
	if !reflect.DeepEqual(first.Record(), second.Record()) {
		t.Errorf("the second probe records\n%+v\nthe first\n%+v", second.Record(), first.Record())
	}
}

// A work dir like the first one (same file system, same modes and owners
// on the way to it) gets the first probe's answer without a command, but
// a containment of its own: what an attempt's uid leaves there is swept
// from it, not from the first work dir.
func TestProbeInAnotherWorkDirOfTheSameKindRunsNoCommand(t *testing.T) {
	cc := countProbeCommands(t)
	cfg := freshConfig(reachableDir(t))
	cfg.Network = false // the sweep is only for a uid of its own without private tmp: as here
	first := mustProbe(t, cfg)
	other := cfg
	other.WorkDir = reachableDir(t)
	second := mustProbe(t, other)
	if n := cc.in(other.WorkDir); n != 0 {
		t.Errorf("a probe in a work dir of the same kind ran %d commands, want none", n)
	}
	if !reflect.DeepEqual(first.Record(), second.Record()) {
		t.Errorf("the second work dir records\n%+v\nthe first\n%+v", second.Record(), first.Record())
	}
	if slices.Contains(second.sweep, cfg.WorkDir) {
		t.Errorf("the second containment sweeps the first work dir: %v", second.sweep)
	}
	if slices.Contains(first.sweep, cfg.WorkDir) != slices.Contains(second.sweep, other.WorkDir) {
		t.Errorf("the first containment sweeps %v, the second %v: want each its own work dir", first.sweep, second.sweep)
	}
	if os.Geteuid() == 0 && !slices.Contains(second.sweep, other.WorkDir) {
		t.Errorf("root, with a uid per attempt and no private tmp, sweeps %v: want the work dir %s in it", second.sweep, other.WorkDir)
	}
}

// A reused answer names the caller's work dir where the record names one:
// root's fresh uid cannot reach a closed work dir, and the reason says
// which.
func TestAReusedProbeNamesTheCallersWorkDir(t *testing.T) {
	cc := countProbeCommands(t)
	cfg := freshConfig(t.TempDir()) // 0700, the service's own
	first := mustProbe(t, cfg)
	other := cfg
	other.WorkDir = t.TempDir()
	second := mustProbe(t, other)
	if n := cc.in(other.WorkDir); n != 0 {
		t.Errorf("a probe in a work dir of the same kind ran %d commands, want none", n)
	}
	user := feature(t, second, FeatureUser)
	if strings.Contains(user.Detail, cfg.WorkDir) {
		t.Errorf("the second work dir's record names the first: %+v", user)
	}
	if os.Geteuid() == 0 && (user.State != events.ContainmentUnsupported || !strings.Contains(user.Detail, other.WorkDir)) {
		t.Errorf("unprivileged_user in a closed work dir: %+v, want unsupported naming %s", user, other.WorkDir)
	}
	if f := feature(t, first, FeatureUser); f.State != user.State {
		t.Errorf("unprivileged_user: %+v in the first work dir, %+v in the second", f, user)
	}
}

// Whatever changes the host's answer is probed anew: other limits, other
// features, a work dir of another kind, the same work dir closed since.
func TestProbeWithOtherInputsProbesAgain(t *testing.T) {
	cc := countProbeCommands(t)
	base := freshConfig(reachableDir(t))
	mustProbe(t, base)
	for _, tc := range []struct {
		name string
		cfg  func() Config
	}{
		{"other limits", func() Config { c := base; c.Limits.OpenFiles++; c.WorkDir = reachableDir(t); return c }},
		{"other features", func() Config { c := base; c.Network = false; c.WorkDir = reachableDir(t); return c }},
		{"a closed work dir", func() Config { c := base; c.WorkDir = t.TempDir(); return c }},
		{"the same work dir closed since", func() Config {
			if err := os.Chmod(base.WorkDir, 0o700); err != nil {
				t.Fatal(err)
			}
			return base
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg()
			before := cc.in(cfg.WorkDir)
			c := mustProbe(t, cfg)
			if cc.in(cfg.WorkDir) == before {
				t.Errorf("no probe command ran for %+v", cfg)
			}
			if tc.name == "the same work dir closed since" && os.Geteuid() == 0 {
				if f := feature(t, c, FeatureUser); f.State != events.ContainmentUnsupported {
					t.Errorf("unprivileged_user in the work dir closed since: %+v, want unsupported", f)
				}
			}
		})
	}
}

// leaderKey marks the context of the caller a test cancels.
type leaderKey struct{}

// A probe whose context ends midway fails with the context's error and
// leaves nothing behind: the next Probe runs the commands again and gets
// every feature the host grants.
func TestACancelledProbeIsNotKept(t *testing.T) {
	cfg := freshConfig(reachableDir(t))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), leaderKey{}, true))
	defer cancel()
	var mu sync.Mutex
	n := map[string]int{}
	tap := func(ctx context.Context, dir string) {
		mu.Lock()
		defer mu.Unlock()
		n[dir]++
		if ctx.Value(leaderKey{}) != nil && n[dir] == 2 {
			cancel() // after the plain command, before the first feature's
		}
	}
	probeTap.Store(&tap)
	t.Cleanup(func() { probeTap.Store(nil) })
	if _, err := Probe(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("a probe cancelled midway: %v, want context.Canceled", err)
	}
	mu.Lock()
	before := n[cfg.WorkDir]
	mu.Unlock()
	c := mustProbe(t, cfg)
	mu.Lock()
	after := n[cfg.WorkDir]
	mu.Unlock()
	if after == before {
		t.Error("the probe after a cancelled one ran no command: the cancelled one was kept")
	}
	if f := feature(t, c, FeatureCPU); f.State != events.ContainmentActive || f.Limit != cfg.Limits.CPUSeconds {
		t.Errorf("cpu_seconds after a cancelled probe: %+v, want active at %d", f, cfg.Limits.CPUSeconds)
	}
}

// Callers that probe the same inputs at once share one probe: the
// commands run are those of one probe, and every caller gets the same
// record.
func TestConcurrentProbesShareOne(t *testing.T) {
	cc := countProbeCommands(t)
	one := freshConfig(reachableDir(t))
	mustProbe(t, one)
	perProbe := cc.in(one.WorkDir)
	cfg := freshConfig(reachableDir(t)) // the same features, so as many commands
	const callers = 6
	records := make([]*events.Containment, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			c, err := Probe(context.Background(), cfg)
			records[i], errs[i] = c.Record(), err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := cc.in(cfg.WorkDir); n != perProbe {
		t.Errorf("%d callers at once ran %d probe commands, one probe runs %d", callers, n, perProbe)
	}
	for i := 1; i < callers; i++ {
		if !reflect.DeepEqual(records[i], records[0]) {
			t.Errorf("caller %d records\n%+v\ncaller 0\n%+v", i, records[i], records[0])
		}
	}
}

// A caller waiting for another's probe does not take that caller's
// cancellation for the host's answer: when the prober is cancelled the
// waiter probes itself and gets every feature.
func TestAWaiterProbesAgainWhenTheProberIsCancelled(t *testing.T) {
	cfg := freshConfig(reachableDir(t))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), leaderKey{}, true))
	defer cancel()
	var (
		waiter    *Containment
		waiterErr error
		waited    = make(chan struct{}, 1)
		done      = make(chan struct{})
		once      sync.Once
		didWait   atomic.Bool
	)
	tap := func(ctx context.Context, _ string) {
		if ctx.Value(leaderKey{}) == nil {
			return
		}
		once.Do(func() {
			go func() {
				defer close(done)
				waiter, waiterErr = Probe(context.Background(), cfg)
			}()
			// The waiter is waiting for this probe (or, where none waits,
			// has probed on its own) before the prober is cancelled.
			select {
			case <-waited:
			case <-done:
			}
			cancel()
		})
	}
	wait := func(string) {
		didWait.Store(true)
		select {
		case waited <- struct{}{}:
		default:
		}
	}
	probeTap.Store(&tap)
	probeWaitTap.Store(&wait)
	t.Cleanup(func() { probeTap.Store(nil); probeWaitTap.Store(nil) })
	if _, err := Probe(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled prober: %v, want context.Canceled", err)
	}
	<-done
	if waiterErr != nil {
		t.Fatalf("the waiter: %v", waiterErr)
	}
	if !didWait.Load() {
		t.Error("the second caller ran a probe of its own beside the first instead of waiting for it")
	}
	if f := feature(t, waiter, FeatureCPU); f.State != events.ContainmentActive || f.Limit != cfg.Limits.CPUSeconds {
		t.Errorf("cpu_seconds of the waiter: %+v, want active at %d", f, cfg.Limits.CPUSeconds)
	}
}
