package bus

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/factline/factline/internal/sleep"
)

// RunLogs is a service's memory of the run logs it loaded recently (the
// kit's run cache), so that a service handling many facts of one run reads
// each fact once: a load fetches only what was appended since the kept
// copy's last sequence. It holds at most max runs, evicting the least
// recently used. Loads of different runs proceed in parallel. It lives in
// the process that made it (Bus.NewRunLogs), unlike the bus's handles on
// what the server keeps (Blobs, Responses, Controls, Limits).
type RunLogs struct {
	bus  *Bus
	max  int
	mu   sync.Mutex
	runs map[string]*list.Element // of *cachedRun
	lru  list.List                // front = most recent
}

type cachedRun struct {
	key  string
	lock chanMutex // held while the run is being extended
	log  RunLog
}

// chanMutex is a mutex whose lock honours a context, so a slow fetch for one
// caller cannot hold others past their deadlines.
type chanMutex chan struct{}

func (m chanMutex) lock(ctx context.Context) error {
	select {
	case m <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (m chanMutex) unlock() { <-m }

// NewRunLogs returns an empty memory of at most max run logs (default
// 1024), loading through b. Each call makes a new one: a service keeps its
// own.
func (b *Bus) NewRunLogs(max int) *RunLogs {
	if max <= 0 {
		max = 1024
	}
	return &RunLogs{bus: b, max: max, runs: make(map[string]*list.Element)}
}

// entry returns the cache slot of a run, creating it (and evicting the
// least recently used slot) when needed.
func (c *RunLogs) entry(suite, run string) *cachedRun {
	key := suite + "." + run
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.runs[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*cachedRun)
	}
	e := &cachedRun{key: key, lock: make(chanMutex, 1), log: RunLog{Suite: suite, Run: run}}
	c.runs[key] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.runs, old.Value.(*cachedRun).key)
	}
	return e
}

// Load returns the run's facts up to now, fetching only the new ones.
func (c *RunLogs) Load(ctx context.Context, suite, run string) (RunLog, error) {
	e := c.entry(suite, run)
	if err := e.lock.lock(ctx); err != nil {
		return RunLog{}, err
	}
	defer e.lock.unlock()
	next := e.log
	if err := c.bus.extendRun(ctx, &next); err != nil {
		return RunLog{}, err
	}
	next.syncFacts()
	e.log = next
	// Callers may append to what they get; clip so they never write into
	// the cache's backing arrays.
	next.Records = slices.Clip(next.Records)
	next.Bad = slices.Clip(next.Bad)
	return next, nil
}

// ErrBehind says a read of the stream's replicas still stopped short of a
// fact known to be committed (a run's log without its delivered fact, a
// read whose consumer stopped receiving). It is transient: the delivery
// that asked for the read is tried again after a pause.
var ErrBehind = errors.New("the replicas that answered lag the stream leader")

// behindWaits are the pauses between fetches of a log that stops short of
// the fact a handler was delivered: about 1.3 s in all, long enough for a
// replica to apply what the leader committed, short enough to hand the
// delivery back soon when it cannot.
var behindWaits = []time.Duration{5, 10, 20, 40, 80, 160, 320, 640}

// LoadThrough is Load for the handler of a delivered fact of the run, at
// stream sequence seq: the log it returns holds that fact. Direct gets are
// answered by any replica of the stream, and one that lags the leader
// answers with an older end of the run; a handler that decided on such a
// log would find the run not ready (or its delivered fact missing) and
// drop work that no redelivery brings back. A log that stops short is
// fetched again after a pause; past behindWaits it fails with ErrBehind.
func (c *RunLogs) LoadThrough(ctx context.Context, suite, run string, seq uint64) (RunLog, error) {
	for i := 0; ; i++ {
		log, err := c.Load(ctx, suite, run)
		if err != nil || log.LastSeq >= seq {
			return log, err
		}
		if i == len(behindWaits) {
			return RunLog{}, fmt.Errorf("load %s/%s through sequence %d: have %d: %w", suite, run, seq, log.LastSeq, ErrBehind)
		}
		if err := sleep.For(ctx, behindWaits[i]*time.Millisecond); err != nil {
			return RunLog{}, err
		}
	}
}

// LoadDelivered is LoadThrough for a fact a consumer delivered: the
// delivered message already names the messages of the run before it (its
// run links), so the log is extended through it without asking the server
// where the run ends, one round trip fewer. The log may then end at the
// delivered fact even when the run has moved on; a writer appending on it
// is refused by the run-wide expected sequence and decides again on a
// fresh load. A delivery without its message in hand, or whose links
// cannot prove the run whole, is loaded by LoadThrough.
func (c *RunLogs) LoadDelivered(ctx context.Context, d Delivery) (RunLog, error) {
	suite, run := d.Fact.Suite, d.Fact.Run
	if d.raw != nil {
		e := c.entry(suite, run)
		if err := e.lock.lock(ctx); err != nil {
			return RunLog{}, err
		}
		next := e.log
		ok := next.LastSeq >= d.Seq
		var err error
		if !ok {
			ok, err = c.bus.extendByLinks(ctx, &next, d.raw, &d.Record)
		}
		if ok && err == nil {
			next.syncFacts()
			e.log = next
		}
		e.lock.unlock()
		if err != nil {
			return RunLog{}, err
		}
		if ok {
			next.Records = slices.Clip(next.Records)
			next.Bad = slices.Clip(next.Bad)
			return next, nil
		}
	}
	return c.LoadThrough(ctx, suite, run, d.Seq)
}

// Peek returns the cached log of a run without asking the server for newer
// facts; false when the cache holds nothing of it, or is being extended.
// It is for a writer that knows it is the run's only writer for now (the
// runner between the facts of a turn, a commit deciding as last writer): a
// view that another writer made stale is refused by the expected sequence
// of its next append (CommitAsLastWriter), not noticed by the read.
func (c *RunLogs) Peek(suite, run string) (RunLog, bool) {
	c.mu.Lock()
	el, ok := c.runs[suite+"."+run]
	c.mu.Unlock()
	if !ok {
		return RunLog{}, false
	}
	e := el.Value.(*cachedRun)
	select {
	case e.lock <- struct{}{}:
	default:
		return RunLog{}, false // being extended: take the fresh path
	}
	defer e.lock.unlock()
	if e.log.LastSeq == 0 {
		return RunLog{}, false
	}
	next := e.log
	next.Records = slices.Clip(next.Records)
	next.Bad = slices.Clip(next.Bad)
	return next, true
}

// observe adds facts the cache's owner just appended on top of base, when
// the cached log is still base: the next load then starts after them
// instead of fetching the writer's own facts back.
func (c *RunLogs) observe(base RunLog, recs []Record) {
	c.mu.Lock()
	el, ok := c.runs[base.Suite+"."+base.Run]
	c.mu.Unlock()
	if !ok {
		return
	}
	e := el.Value.(*cachedRun)
	select {
	case e.lock <- struct{}{}:
	default:
		return
	}
	defer e.lock.unlock()
	if e.log.LastSeq != base.LastSeq || len(e.log.Records) != len(base.Records) {
		return
	}
	// Appended where the cached records lie, as Load extends them: every
	// log handed out is clipped, so no holder sees the new records, and a
	// copy here cost the whole log at every commit (issue 38). A bail-out
	// below leaves e.log as it was; what it wrote lies past every length.
	next := e.log
	pos := next.NextPosition()
	for _, r := range recs {
		if r.Duplicate || r.Seq <= next.LastSeq || r.Fact.Position != pos {
			return // not a plain extension: leave it to the next load
		}
		next.Records = append(next.Records, r)
		next.LastSeq = r.Seq
		pos++
	}
	next.syncFacts()
	e.log = next
}

// Forget drops a run from the cache (e.g. when it ended).
func (c *RunLogs) Forget(suite, run string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.runs[suite+"."+run]; ok {
		c.lru.Remove(el)
		delete(c.runs, suite+"."+run)
	}
}

// Len reports how many runs the cache holds.
func (c *RunLogs) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
