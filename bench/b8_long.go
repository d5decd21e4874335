package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// The turns B8 compares: the run's early turns against its late ones.
const (
	longEarlyFrom, longEarlyTo = 1, 10
	longLateFrom, longLateTo   = 40, 49
)

// longResult is one repetition of B8.
type longResult struct {
	early, late time.Duration // median per-turn latency of each range
	blobBytes   float64       // bytes the blob bucket grew by, per turn
}

// benchLong runs one run of turns turns (at least longLateTo) through the
// five services and returns the median per-turn latency (as B3 measures
// it) of its turns 1–10 and of its turns 40–49: a turn whose cost grew
// with the run's length shows as late above early. It also returns the
// bytes the blob bucket grew by per turn: the run's requests (and the
// suite's case), which grow with the run when each is stored whole.
func benchLong(ctx context.Context, b *bus.Bus, dir, name string, turns int) (longResult, error) {
	if turns < longLateTo {
		return longResult{}, fmt.Errorf("B8 needs a run of at least %d turns, not %d", longLateTo, turns)
	}
	_, blobsBefore, err := storedBytes(ctx, b)
	if err != nil {
		return longResult{}, err
	}
	if err := submitSuite(ctx, b, dir, name, 1, turns); err != nil {
		return longResult{}, err
	}
	if err := awaitReported(ctx, b, []string{name}, 2*time.Minute); err != nil {
		return longResult{}, err
	}
	facts, err := readStamped(ctx, b, events.SuiteFilter(name))
	if err != nil {
		return longResult{}, err
	}
	_, blobsAfter, err := storedBytes(ctx, b)
	if err != nil {
		return longResult{}, err
	}
	lat := turnLatencies(facts)
	if len(lat) != turns {
		return longResult{}, fmt.Errorf("B8: %d turn latencies from %d facts, want %d", len(lat), len(facts), turns)
	}
	return longResult{early: percentile(lat[longEarlyFrom-1:longEarlyTo], 50), late: percentile(lat[longLateFrom-1:longLateTo], 50),
		blobBytes: float64(blobsAfter-blobsBefore) / float64(turns)}, nil
}
