package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// The chaos campaign's faults: which strikes when (a moment of the
// schedule coming, at a runner's publish or in the log), how each is done
// to a runner process or to the cluster, and how it is mended.

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
