package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// The chaos campaign (issue 30): the fault suite on a three-node cluster
// of nats-server processes, driven by three runner processes and one
// process of the other services, each reaching the cluster only through
// proxies of its own, while a seeded schedule (chaosplan_test.go) kills
// runner processes, kills, stops and restarts nodes, restarts the cluster
// node by node, fills its store, and cuts runner processes off at the
// worst moments: right after a notify run's intent reached the cluster,
// during a settle, during a seal. Each seed must end as the fault-free
// suite does: the same report and facts, an audit that holds with the
// sink's own record, every effect applied once, nothing dead-lettered,
// and every fact the cluster acknowledged still stored where it said.
//
// `go test ./integration/` runs one seed (drawn from the clock, printed);
// FACTLINE_CHAOS_SEED=N replays one seed, FACTLINE_CHAOS_SEEDS=K runs K
// seeds from FACTLINE_CHAOS_FIRST (or the clock): make chaos.

const (
	chaosRunners = 3
	// chaosMaxStore caps each node's store: roomy for the suite (a few
	// MB), small enough to fill in seconds.
	chaosMaxStore = "16MB"
	// chaosSeedBound bounds one seed.
	chaosSeedBound = 8 * time.Minute
)

// chaosSeeds are the seeds this test runs.
func chaosSeeds(t *testing.T) []uint64 {
	t.Helper()
	parse := func(name string) (uint64, bool) {
		v := os.Getenv(name)
		if v == "" {
			return 0, false
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, v, err)
		}
		return n, true
	}
	if seed, ok := parse("FACTLINE_CHAOS_SEED"); ok {
		return []uint64{seed}
	}
	count, ok := parse("FACTLINE_CHAOS_SEEDS")
	if !ok || count == 0 {
		count = 1
	}
	first, ok := parse("FACTLINE_CHAOS_FIRST")
	if !ok {
		first = uint64(time.Now().UnixNano()) % 1_000_000_000
	}
	seeds := make([]uint64, count)
	for i := range seeds {
		seeds[i] = first + uint64(i)
	}
	return seeds
}

// chaosResult is one seed's line of the campaign's summary.
type chaosResult struct {
	seed                   uint64
	runs, faults, schedule int
	takeovers              int // runs claimed again by another runner
	acked                  int
	violations             int
	took                   time.Duration
}

func (r chaosResult) String() string {
	return fmt.Sprintf("chaos seed %d: runs %d, faults injected %d of %d, takeovers %d, acknowledged facts checked %d, violations %d (%v)",
		r.seed, r.runs, r.faults, r.schedule, r.takeovers, r.acked, r.violations, r.took.Round(time.Second))
}

// TestChaos runs the campaign's seeds, each against the fault suite run
// once without faults, and prints a line a seed and the campaign's total.
func TestChaos(t *testing.T) {
	want := faultFree(t)
	seeds := chaosSeeds(t)
	var results []chaosResult
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			results = append(results, runChaos(t, seed, want))
		})
	}
	var total chaosResult
	var sb strings.Builder
	for _, r := range results {
		fmt.Fprintln(&sb, r)
		total.runs += r.runs
		total.faults += r.faults
		total.takeovers += r.takeovers
		total.acked += r.acked
		total.violations += r.violations
		total.took += r.took
	}
	fmt.Fprintf(&sb, "chaos campaign: %d seeds, %d runs, %d faults injected, %d takeovers, %d acknowledged facts checked, %d violations, %v\n",
		len(results), total.runs, total.faults, total.takeovers, total.acked, total.violations, total.took.Round(time.Second))
	t.Log("\n" + sb.String())
	fmt.Print(sb.String())
}

// dialCluster opens the test's own bus on the whole cluster (no proxy),
// once JetStream has its meta leader, reconnecting for ever.
func dialCluster(t *testing.T, ctx context.Context, url string) *bus.Bus {
	t.Helper()
	for ctx.Err() == nil {
		actx, stop := context.WithTimeout(ctx, 5*time.Second)
		b, err := bus.Dial(actx, url, bus.Config{Replicas: 3}, nats.ReconnectWait(100*time.Millisecond))
		stop()
		if err == nil {
			t.Cleanup(b.Conn().Close)
			return b
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the cluster never took the streams")
	return nil
}

// follow reads the suite's facts from the log as they are committed, for
// ever (until ctx ends), resuming after the last it read when the read
// fails (a node restarting).
func follow(ctx context.Context, b *bus.Bus, suite string, fn func(events.Fact)) {
	var last uint64
	for ctx.Err() == nil {
		seq, _ := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite), FromSeq: last + 1, Follow: true}, func(raw bus.Raw) error {
			last = raw.Seq
			if f, err := raw.Fact(); err == nil {
				fn(f)
			}
			return nil
		})
		if seq > last {
			last = seq
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// runChaos runs one seed and checks its outcome.
func runChaos(t *testing.T, seed uint64, want suiteOutcome) (res chaosResult) {
	schedule := chaosSchedule(seed)
	text := scheduleText(seed, schedule)
	t.Log("\n" + text)
	fmt.Print(text)
	ct := &countingTB{TB: t}
	for i, f := range schedule {
		if have := momentsIn(want, f.at); have < f.at.nth {
			t.Fatalf("fault %d (%s) would never strike: the fault-free suite has %d such moments (has the fault suite changed shape? see chaosplan_test.go)", i+1, f, have)
		}
	}
	c := &chaos{t: t, seed: seed, schedule: schedule, start: time.Now(),
		pubSeen: map[string]bool{}, hit: map[string]bool{}, pubCount: map[countKey]int{}, factCount: map[countKey]int{}, struck: make([]bool, len(schedule))}
	res = chaosResult{seed: seed, schedule: len(schedule)}
	defer func() {
		// No fault strikes or is still being mended once the seed ends.
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		mctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		c.mended(mctx)
		cancel()
		theSink().reset(nil)
		res.took = time.Since(c.start)
		res.violations = ct.count()
		c.mu.Lock()
		for _, s := range c.struck {
			if s {
				res.faults++
			}
		}
		c.mu.Unlock()
		t.Logf("%s\nwhat happened:\n%s", text, c.journalText())
		fmt.Println(res)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), chaosSeedBound)
	defer cancel()
	theSink().reset(func(op string) { c.note("sink: %s applied", op) })
	c.cluster = startNatsCluster(t, chaosMaxStore)
	c.b = dialCluster(t, ctx, c.cluster.url())
	acks := bustest.NewAckLog(func(s string) bool { return strings.HasPrefix(s, events.FactPrefix+".") })
	viaProxies := func() ([]*bustest.Proxy, string) {
		var ps []*bustest.Proxy
		var urls []string
		for _, a := range c.cluster.addrs() {
			p := bustest.StartProxy(t, a, acks)
			ps = append(ps, p)
			urls = append(urls, p.URL())
		}
		return ps, strings.Join(urls, ",")
	}
	ackWait := chaosAckWait.String()
	_, servicesURL := viaProxies()
	startProc(t, "serve", "--services", "staller,decider,grader,meter", "--nats", servicesURL, "--replicas", "3", "--ack-wait", ackWait)
	for i := range chaosRunners {
		ps, url := viaProxies()
		r := &chaosRunner{index: i + 1, proxies: ps}
		for _, p := range ps {
			p.OnPublish(c.onPublish(r))
		}
		r.p = startProc(t, "serve", "--services", "runner", "--nats", url, "--replicas", "3", "--instances", "2",
			"--ack-wait", ackWait, "--max-deliver", faultMaxDeliver, "--work-dir", t.TempDir())
		c.mu.Lock()
		c.runners = append(c.runners, r)
		c.mu.Unlock()
	}
	rctx, stopReading := context.WithCancel(ctx)
	var reader sync.WaitGroup
	reader.Go(func() { follow(rctx, c.b, "demo", c.onFact) })
	defer func() { stopReading(); reader.Wait() }()

	submitSuite(ct, ctx, c.b, writeFaultSuite(t, faultTrials))
	progress := func() string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "\n%s\nwhat happened:\n%s\n", text, c.journalText())
		for _, r := range c.runners {
			fmt.Fprintf(&sb, "runner %d: pid %d alive %v\n", r.index, r.p.pid(), r.p.alive())
		}
		return sb.String()
	}
	// Every fault is mended before the outcome is read: a fault struck
	// late (a rolling restart) may outlast the suite.
	awaitSuiteReported(ct, ctx, c.b, "demo", progress)
	if !c.mended(ctx) {
		ct.Fatalf("the faults were never all mended%s", progress())
	}
	got := awaitReported(ct, ctx, c.b, "demo", progress)
	res.runs = got.ended
	for _, f := range got.facts {
		if cl, ok := f.Body.(events.RunClaimed); ok && cl.Lease > 1 {
			res.takeovers++
		}
	}
	// The facts of every run a fault struck at, so that what each fault
	// did is on record whether the seed passes or not.
	c.mu.Lock()
	hit := maps.Clone(c.hit)
	c.mu.Unlock()
	logRuns(t, got, hit)
	checkOutcome(ct, got, want)
	deadLetters(ct, ctx, c.b)
	res.acked = checkAcknowledged(ct, ctx, c.b, acks.Acks())
	c.mu.Lock()
	for i, s := range c.struck {
		if !s {
			ct.Errorf("fault %d (%s) never struck: its moment never came (has the fault suite changed shape?)", i+1, schedule[i])
		}
	}
	c.mu.Unlock()
	return res
}
