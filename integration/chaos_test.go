package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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

// countingTB counts the failures reported through it: a seed's
// violations.
type countingTB struct {
	testing.TB
	mu sync.Mutex
	n  int
}

func (c *countingTB) note() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *countingTB) Errorf(format string, args ...any) {
	c.TB.Helper()
	c.note()
	c.TB.Errorf(format, args...)
}

func (c *countingTB) Error(args ...any) {
	c.TB.Helper()
	c.note()
	c.TB.Error(args...)
}

func (c *countingTB) Fatalf(format string, args ...any) {
	c.TB.Helper()
	c.note()
	c.TB.Fatalf(format, args...)
}

func (c *countingTB) Fatal(args ...any) {
	c.TB.Helper()
	c.note()
	c.TB.Fatal(args...)
}

func (c *countingTB) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// chaosRunner is one runner process and the proxies it reaches the
// cluster through (one per node).
type chaosRunner struct {
	index   int
	p       *proc
	proxies []*bustest.Proxy
	down    bool // killed and not started again yet (under chaos.mu)
}

func (r *chaosRunner) partition(kind faultKind) {
	for _, p := range r.proxies {
		if kind == dropRunner {
			p.Drop()
		} else {
			p.Hold()
		}
	}
}

func (r *chaosRunner) heal() {
	for _, p := range r.proxies {
		p.Heal()
	}
}

// chaos runs one seed's schedule against the fleet.
type chaos struct {
	t        *testing.T
	seed     uint64
	schedule []fault
	cluster  *natsCluster
	b        *bus.Bus
	runners  []*chaosRunner
	start    time.Time

	mu        sync.Mutex
	pubSeen   map[string]bool // subjects of facts runners published
	pubCount  map[countKey]int
	factCount map[countKey]int
	struck    []bool          // by schedule entry
	hit       map[string]bool // runs a fault struck at a fact of theirs
	journal   []string        // what happened when, for the summary and a failure
	active    int             // faults not yet mended
	closed    bool            // no fault strikes any more
	clusterMu sync.Mutex      // one cluster fault at a time: two nodes down lose the quorum
}

// countKey counts facts of a kind, of every run or of notify runs only.
type countKey struct {
	kind   events.Kind
	notify bool
}

func (c *chaos) note(format string, args ...any) {
	line := fmt.Sprintf("%7.1fs ", time.Since(c.start).Seconds()) + fmt.Sprintf(format, args...)
	c.mu.Lock()
	c.journal = append(c.journal, line)
	c.mu.Unlock()
}

// mend runs fn, which mends a fault, in the background; mended waits
// until every such function has returned.
func (c *chaos) mend(fn func()) {
	c.mu.Lock()
	c.active++
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			c.active--
			c.mu.Unlock()
		}()
		fn()
	}()
}

// mended waits until no fault is left to mend, or ctx ends.
func (c *chaos) mended(ctx context.Context) bool {
	for {
		c.mu.Lock()
		n := c.active
		c.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *chaos) journalText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.journal, "\n")
}

func isNotify(run string) bool { return strings.HasPrefix(run, "notify-") }

// countFact counts one fact of kind for run.
func countFact(counts map[countKey]int, kind events.Kind, run string) {
	counts[countKey{kind, false}]++
	if isNotify(run) {
		counts[countKey{kind, true}]++
	}
}

// due returns the schedule entries whose moment has come (and marks them
// struck). Called under c.mu.
func (c *chaos) due(published bool, counts map[countKey]int, kind events.Kind) []int {
	if c.closed {
		return nil
	}
	var out []int
	for i, f := range c.schedule {
		if c.struck[i] || f.at.published != published || f.at.kind != kind {
			continue
		}
		if counts[countKey{kind, f.at.notify}] == f.at.nth {
			c.struck[i] = true
			out = append(out, i)
		}
	}
	return out
}

// onPublish is every runner proxy's hook: the moments placed at a publish.
func (c *chaos) onPublish(r *chaosRunner) func(bustest.Publish) func() {
	return func(pub bustest.Publish) func() {
		suite, run, kind, err := events.ParseFactSubject(pub.Subject)
		if err != nil || suite != "demo" {
			return nil
		}
		c.mu.Lock()
		if c.pubSeen[pub.Subject] {
			c.mu.Unlock()
			return nil
		}
		c.pubSeen[pub.Subject] = true
		countFact(c.pubCount, kind, run)
		due := c.due(true, c.pubCount, kind)
		c.mu.Unlock()
		var after []func()
		for _, i := range due {
			f := c.schedule[i]
			c.mu.Lock()
			c.hit[run] = true
			c.mu.Unlock()
			c.note("fault %d strikes runner %d (pid %d) %s on %s", i+1, r.index, r.p.pid(), f.at, run)
			strike := func() { c.strikeRunner(i, f, r) }
			if f.before {
				strike()
			} else {
				after = append(after, strike)
			}
		}
		if len(after) == 0 {
			return nil
		}
		return func() {
			for _, fn := range after {
				fn()
			}
		}
	}
}

// onFact is the test's reader: the moments placed at a fact in the log.
func (c *chaos) onFact(f events.Fact) {
	c.mu.Lock()
	countFact(c.factCount, f.Kind(), f.Run)
	due := c.due(false, c.factCount, f.Kind())
	hit := c.hit[f.Run]
	c.mu.Unlock()
	if hit {
		c.note("log: %s pos %d %s by %s", f.Run, f.Position, f.Kind(), f.Producer.Instance)
	}
	for _, i := range due {
		fl := c.schedule[i]
		c.mu.Lock()
		c.hit[f.Run] = true
		c.mu.Unlock()
		if !fl.kind.runnerFault() {
			c.note("fault %d: %s (%s)", i+1, fl, f.Run)
			c.mend(func() { c.strikeCluster(i, fl) })
			continue
		}
		r := c.runnerOf(f.Producer.Instance)
		c.note("fault %d strikes runner %d (pid %d, which committed it: %s) %s on %s", i+1, r.index, r.p.pid(), f.Producer.Instance, fl.at, f.Run)
		c.strikeRunner(i, fl, r)
	}
}

// runnerOf is the runner process behind an instance name, or (when it was
// not a runner, or that process is down) the first runner that is up.
func (c *chaos) runnerOf(instance string) *chaosRunner {
	pid := instancePID(instance)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.runners {
		if !r.down && pid != 0 && r.p.pid() == pid {
			return r
		}
	}
	for _, r := range c.runners {
		if !r.down {
			return r
		}
	}
	return c.runners[0]
}

// strikeRunner partitions or kills a runner process now, and heals or
// restarts it in the background.
func (c *chaos) strikeRunner(i int, f fault, r *chaosRunner) {
	switch f.kind {
	case holdRunner, dropRunner:
		r.partition(f.kind)
		c.mend(func() {
			time.Sleep(f.dur)
			r.heal()
			c.note("fault %d healed: runner %d reaches the cluster again", i+1, r.index)
		})
	case killRunner:
		c.mu.Lock()
		if r.down {
			c.mu.Unlock()
			c.note("fault %d: runner %d is down already", i+1, r.index)
			return
		}
		r.down = true
		c.mu.Unlock()
		r.p.crash()
		c.mend(func() {
			time.Sleep(f.pause)
			r.p.start()
			c.mu.Lock()
			r.down = false
			c.mu.Unlock()
			c.note("fault %d healed: runner %d started again (pid %d)", i+1, r.index, r.p.pid())
		})
	}
}

// strikeCluster breaks the cluster as the fault says and mends it.
func (c *chaos) strikeCluster(i int, f fault) {
	c.clusterMu.Lock()
	defer c.clusterMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	switch f.kind {
	case killNode, termNode:
		sig := syscall.SIGKILL
		if f.kind == termNode {
			sig = syscall.SIGTERM
		}
		err = c.cluster.restart(ctx, c.cluster.nodes[f.node], sig, f.pause)
	case rolling:
		for _, n := range c.cluster.nodes {
			if err = c.cluster.restart(ctx, n, syscall.SIGTERM, f.pause); err != nil {
				break
			}
			c.note("fault %d: %s restarted and healthy", i+1, n.name)
		}
	case fullStore:
		var free func(context.Context) error
		var n int
		free, n, err = fillStore(ctx, c.b.JetStream())
		if err == nil {
			c.note("fault %d: the store is full (%d chunks of other data)", i+1, n)
			time.Sleep(f.dur)
			err = free(ctx)
		}
	}
	if err != nil {
		c.t.Errorf("fault %d (%s) could not be mended: %v", i+1, f, err)
		return
	}
	c.note("fault %d healed", i+1)
}

// fillStore writes other data into a replicated stream until the cluster
// refuses a write for want of space, and returns how to remove it again.
func fillStore(ctx context.Context, js jetstream.JetStream) (func(context.Context) error, int, error) {
	const name = "CHAOS_OTHER"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"chaos-other.>"}, Storage: jetstream.FileStorage, Replicas: 3}); err != nil {
		return nil, 0, fmt.Errorf("create %s: %w", name, err)
	}
	free := func(ctx context.Context) error {
		for {
			err := js.DeleteStream(ctx, name)
			if err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("remove %s: %w", name, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	data := make([]byte, 256<<10)
	for n := 0; n < 4096; n++ {
		_, err := js.Publish(ctx, fmt.Sprintf("chaos-other.%d", n), data)
		if bus.StoreFull(err) {
			return free, n, nil
		}
		if err != nil && ctx.Err() != nil {
			_ = free(context.Background())
			return nil, n, fmt.Errorf("fill the store: %w", err)
		}
	}
	_ = free(ctx)
	return nil, 0, errors.New("fill the store: it took 1 GB without refusing a write")
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

// momentsIn counts the moments like m in the fault-free outcome: facts
// of m's kind (of notify runs only when m says so), or for a moment at a
// publish the runs with such a fact.
func momentsIn(o suiteOutcome, m moment) int {
	n := 0
	runs := map[string]bool{}
	for _, f := range o.facts {
		if f.Kind() != m.kind || m.notify && !isNotify(f.Run) {
			continue
		}
		if m.published {
			if !runs[f.Run] {
				runs[f.Run] = true
				n++
			}
			continue
		}
		n++
	}
	return n
}

// awaitSuiteReported waits until the suite's report is in the log.
func awaitSuiteReported(t testing.TB, ctx context.Context, b *bus.Bus, suite string, progress func() string) {
	t.Helper()
	for {
		if log, err := b.LoadRun(ctx, suite, events.SuiteScope); err == nil {
			for _, f := range log.Facts() {
				if f.Kind() == events.KindSuiteReported {
					return
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the suite was never reported%s", progress())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// deadLetters fails for every message dead-lettered.
func deadLetters(t testing.TB, ctx context.Context, b *bus.Bus) {
	t.Helper()
	dead, err := b.DeadLetters(ctx, "")
	if err != nil {
		t.Errorf("read the dead letters: %v", err)
		return
	}
	for _, d := range dead {
		t.Errorf("dead letter from %s (%s seq %d): %s", d.Consumer, d.Subject, d.StreamSeq, d.Reason)
	}
}

// checkAcknowledged checks that every fact the cluster acknowledged to a
// service process is stored at the sequence the acknowledgement named,
// on its subject, as it was published (a duplicate's acknowledgement: the
// message stored first under the same ID). It returns how many it
// checked.
func checkAcknowledged(t testing.TB, ctx context.Context, b *bus.Bus, acks []bustest.Ack) int {
	t.Helper()
	stored := map[uint64]bus.Raw{}
	if _, err := b.Read(ctx, bus.ReadOptions{}, func(raw bus.Raw) error {
		stored[raw.Seq] = raw
		return nil
	}); err != nil {
		t.Errorf("read the log: %v", err)
		return 0
	}
	n := 0
	for _, a := range acks {
		if a.Stream != bus.FactsStream {
			continue
		}
		n++
		raw, ok := stored[a.Seq]
		switch {
		case !ok:
			t.Errorf("acknowledged fact lost: %s (msg id %q) was acknowledged at sequence %d, which the log does not hold", a.Subject, a.MsgID(), a.Seq)
		case raw.Subject != a.Subject:
			t.Errorf("acknowledged fact lost: %s (msg id %q) was acknowledged at sequence %d, which holds %s", a.Subject, a.MsgID(), a.Seq, raw.Subject)
		case a.Duplicate && raw.MsgID != a.MsgID():
			t.Errorf("acknowledged duplicate of %s (msg id %q) at sequence %d, which holds msg id %q", a.Subject, a.MsgID(), a.Seq, raw.MsgID)
		case !a.Duplicate && !bytes.Equal(raw.Data, a.Data):
			t.Errorf("acknowledged fact changed: %s (msg id %q) at sequence %d holds other bytes than were acknowledged", a.Subject, a.MsgID(), a.Seq)
		}
	}
	return n
}
