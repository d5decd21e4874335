package bus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/factline/factline/internal/sleep"
)

// DecideFunc looks at a run's committed facts and returns what to append
// (nothing when there is nothing to do). It must be a pure function of the
// log: Commit calls it again after every conflict. Facts it returns take
// positions from log.NextPosition() on.
type DecideFunc func(log RunLog) ([]Pending, error)

// ErrTooManyConflicts is returned when a run kept moving under a writer for
// every attempt Commit allows.
var ErrTooManyConflicts = errors.New("too many append conflicts")

// commitAttempts bounds the reload-and-decide loop; contention on one run
// is between a handful of services, so a few rounds settle it.
const commitAttempts = 8

// Commit is the one write path services use: load the run, decide, append
// under optimistic concurrency, and on conflict reload and decide again.
// A decision of several facts is appended with AppendBatch: as one atomic
// batch where FACTS takes them, else one fact at a time.
//
// Before appending, and again after a conflict, it looks for the decided
// facts' message IDs in the log: those already committed (a redelivered
// input, or a retried append whose first try landed) are returned as they
// are and not appended again. A standalone server checks the
// expected sequence before deduplication, so a retry can fail with a
// conflict rather than report a duplicate; the reload covers both.
//
// runs, the caller's run cache, may be nil: every load then asks the
// server.
func (b *Bus) Commit(ctx context.Context, runs *RunLogs, suite, run string, decide DecideFunc) ([]Record, error) {
	return b.commit(ctx, runs, suite, run, decide, false)
}

// CommitAsLastWriter is Commit for a writer that expects nobody else to
// have appended to the run since its own last commit through runs (a
// runner between the facts of one turn): the first attempt decides on the
// cached log without asking the server for newer facts, saving a round
// trip, and optimistic concurrency refuses the append if somebody did
// append. A decision of nothing (or an error) on the cached log is made
// again on a fresh one, so a stale view never passes for "nothing to do".
func (b *Bus) CommitAsLastWriter(ctx context.Context, runs *RunLogs, suite, run string, decide DecideFunc) ([]Record, error) {
	return b.commit(ctx, runs, suite, run, decide, runs != nil)
}

func (b *Bus) commit(ctx context.Context, runs *RunLogs, suite, run string, decide DecideFunc, optimistic bool) ([]Record, error) {
	load := func() (RunLog, error) {
		if runs != nil {
			return runs.Load(ctx, suite, run)
		}
		return b.LoadRun(ctx, suite, run)
	}
	var lastErr error
	for attempt := 0; attempt < commitAttempts; {
		var log RunLog
		cached := false
		if optimistic {
			optimistic = false
			log, cached = runs.Peek(suite, run)
		}
		if !cached {
			var err error
			if log, err = load(); err != nil {
				return nil, err
			}
		}
		pending, err := decide(log)
		if cached && (err != nil || len(pending) == 0) {
			continue // decide again on the fresh log
		}
		if err != nil {
			return nil, fmt.Errorf("decide %s/%s: %w", suite, run, err)
		}
		if len(pending) == 0 {
			return nil, nil
		}
		done, rest := splitCommitted(log, pending)
		if len(rest) == 0 {
			return done, nil
		}
		recs, err := b.AppendBatch(ctx, log.Expect(), rest...)
		if err == nil {
			if runs != nil {
				runs.observe(log, recs)
			}
			return append(done, recs...), nil
		}
		if !errors.Is(err, ErrConflict) {
			return nil, err
		}
		lastErr = err
		if cached {
			continue // the cache was behind: not contention, no backoff
		}
		b.log.Debug("append conflict; reloading", "suite", suite, "run", run, "attempt", attempt+1)
		if err := sleep.For(ctx, backoff(attempt)); err != nil {
			return nil, err
		}
		attempt++
	}
	return nil, fmt.Errorf("commit to %s/%s: %w after %d attempts: %w", suite, run, ErrTooManyConflicts, commitAttempts, lastErr)
}

// splitCommitted separates the pending facts whose message IDs the log
// already holds (returned as their committed records) from those still to
// append. A crash between two appends of one decision leaves such a prefix.
func splitCommitted(log RunLog, pending []Pending) (done []Record, rest []Pending) {
	for _, p := range pending {
		id := p.MsgID
		if id == "" {
			id = p.Fact.ID.String()
		}
		if r, ok := log.ByMsgID(id); ok {
			r.Duplicate = true
			done = append(done, r)
			continue
		}
		rest = append(rest, p)
	}
	return done, rest
}

func backoff(attempt int) time.Duration {
	base := time.Millisecond << min(attempt, 6)
	return base + rand.N(base)
}
