package kit

import (
	"container/list"
	"sync"
	"sync/atomic"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// FoldCacheSize bounds the runs whose fold a Folds keeps by default, as a
// service's run cache bounds the runs whose log it keeps.
const FoldCacheSize = 1024

// Folds keeps, per run, a service's fold (the pure core's state) of the
// run's log up to some record, so that handling the run's next fact folds
// only the facts since: a turn's cost does not grow with the run (issue 24;
// the stall handler and the decider folded the whole log again every
// turn). The log stays the state: a fold is used only while the record it
// stopped after is still at its place in the log handed in (facts are
// immutable), and any doubt folds the log from its start. A core's fold
// reuses its state's storage, so a fold is taken out while it is folded
// on and put back after; a handler of the same run meanwhile folds from
// the start.
type Folds[S any] struct {
	mu   sync.Mutex
	max  int
	runs map[string]*list.Element
	lru  list.List // of *foldEntry[S]; front = most recent
	// folded counts the facts FoldOn folded: the work the cache leaves to
	// do, which grows with a run's new facts, not with the run.
	folded atomic.Int64
}

// foldEntry is one run's fold over its first n records, the last of which
// has stream sequence seq.
type foldEntry[S any] struct {
	key string
	st  S
	n   int
	seq uint64
}

// NewFolds returns an empty fold cache of at most size runs (FoldCacheSize
// when size < 1). A service passes its run cache's size
// (Shell.RunCacheSize): a fold is of use only while its run's log is
// cached too.
func NewFolds[S any](size int) *Folds[S] {
	if size < 1 {
		size = FoldCacheSize
	}
	return &Folds[S]{max: size, runs: map[string]*list.Element{}}
}

// FoldOn returns the fold of records[:upto]: the run's kept fold, taken
// out and folded on over the records since, or else start() folded over
// all of them. The fold is not put back: the caller puts it (Put) once it
// has decided on it, so that a fold that decided nothing is not kept.
func (c *Folds[S]) FoldOn(suite, run string, records []bus.Record, upto int, start func() S, fold func(S, events.Fact) S) S {
	st, from, ok := c.Take(suite, run, records, upto)
	if !ok {
		st, from = start(), 0
	}
	for _, r := range records[from:upto] {
		st = fold(st, r.Fact)
	}
	c.folded.Add(int64(upto - from))
	return st
}

// Folded is how many facts FoldOn has folded, in all.
func (c *Folds[S]) Folded() int64 { return c.folded.Load() }

// Len is how many runs' folds the cache keeps now.
func (c *Folds[S]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Take removes and returns the run's fold and how many of records it
// covers, if it covers a prefix of records no longer than upto; otherwise
// it returns false and leaves the cache as it is.
func (c *Folds[S]) Take(suite, run string, records []bus.Record, upto int) (S, int, bool) {
	var zero S
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.runs[suite+"."+run]
	if !ok {
		return zero, 0, false
	}
	e := el.Value.(*foldEntry[S])
	if e.n > upto || e.n > len(records) || records[e.n-1].Seq != e.seq {
		return zero, 0, false
	}
	c.lru.Remove(el)
	delete(c.runs, e.key)
	return e.st, e.n, true
}

// Put keeps a run's fold over records[:n], unless the cache holds one that
// goes further.
func (c *Folds[S]) Put(suite, run string, st S, records []bus.Record, n int) {
	if n == 0 || n > len(records) {
		return
	}
	key := suite + "." + run
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.runs[key]; ok {
		if el.Value.(*foldEntry[S]).n >= n {
			return
		}
		c.lru.Remove(el)
		delete(c.runs, key)
	}
	c.runs[key] = c.lru.PushFront(&foldEntry[S]{key: key, st: st, n: n, seq: records[n-1].Seq})
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.runs, old.Value.(*foldEntry[S]).key)
	}
}
