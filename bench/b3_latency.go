package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// latencyResult is one repetition of B3.
type latencyResult struct {
	p50, p99       time.Duration // factline: turn.started to the runner acting on stop.decided
	rawP50, rawP99 time.Duration // the same chain of appends and hops, raw
}

// stamped is a stored fact with the server's timestamp.
type stamped struct {
	f  events.Fact
	at time.Time
}

// readStamped reads the facts under filter with their stored timestamps,
// each checked against its subject as every reader of the log does.
func readStamped(ctx context.Context, b *bus.Bus, filter string) ([]stamped, error) {
	return readStampedWith(ctx, b, filter, bus.Raw.Fact)
}

// readStampedWith is readStamped with the facts decoded by decode: the raw
// chain's facts stand alone (envelope version 3) on subjects of its own,
// which name no kind of the log.
func readStampedWith(ctx context.Context, b *bus.Bus, filter string, decode func(bus.Raw) (events.Fact, error)) ([]stamped, error) {
	var out []stamped
	_, err := b.Read(ctx, bus.ReadOptions{Filter: filter}, func(r bus.Raw) error {
		f, err := decode(r)
		if err != nil {
			return err
		}
		out = append(out, stamped{f, r.Time})
		return nil
	})
	return out, err
}

// turnLatencies measures, for every turn of one run, the time from its
// turn.started being stored to the runner's next fact after the turn's
// stop.decided being stored: the runner acting on the decision (starting
// the next turn, or ending the run). Timestamps are the server's, so
// nothing the benchmark does in between is counted.
func turnLatencies(facts []stamped) []time.Duration {
	var out []time.Duration
	var started time.Time
	decided := false
	for _, s := range facts {
		switch s.f.Body.(type) {
		case events.TurnStarted:
			if decided {
				out = append(out, s.at.Sub(started))
			}
			started, decided = s.at, false
		case events.StopDecided:
			decided = true
			continue
		}
		if decided && s.f.Producer.Service == events.OwnerRunner {
			out = append(out, s.at.Sub(started))
			decided = false
		}
	}
	return out
}

// benchLatency runs one run of turns turns through the five services and
// measures its per-turn latency, then the raw chain of the same appends and
// hops.
func benchLatency(ctx context.Context, b *bus.Bus, dir, name string, turns int) (latencyResult, error) {
	if err := submitSuite(ctx, b, dir, name, 1, turns); err != nil {
		return latencyResult{}, err
	}
	if err := awaitReported(ctx, b, []string{name}, 2*time.Minute); err != nil {
		return latencyResult{}, err
	}
	facts, err := readStamped(ctx, b, events.SuiteFilter(name))
	if err != nil {
		return latencyResult{}, err
	}
	lat := turnLatencies(facts)
	if len(lat) != turns {
		return latencyResult{}, fmt.Errorf("B3: %d turn latencies from %d facts, want %d", len(lat), len(facts), turns)
	}
	raw, err := rawChain(ctx, b, name, 1, turns)
	if err != nil {
		return latencyResult{}, fmt.Errorf("B3 raw: %w", err)
	}
	return latencyResult{p50: percentile(lat, 50), p99: percentile(lat, 99),
		rawP50: percentile(raw.latencies, 50), rawP99: percentile(raw.latencies, 99)}, nil
}
