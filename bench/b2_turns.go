package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/factline/factline/bus"
)

// turnsResult is one repetition of B2.
type turnsResult struct {
	factsPerSec float64
	turnsPerSec float64
	facts       uint64
	elapsed     time.Duration
	// factBytes and blobBytes are what the suite added to the FACTS
	// stream and to the blob bucket's stream (messages with their
	// subjects and headers, as the server counts them).
	factBytes, blobBytes uint64
}

// benchTurns submits a suite of runs concurrent runs of turns turns each to
// the five services running in this process, and measures the facts
// committed per second from the submission to the meter's report.
func benchTurns(ctx context.Context, b *bus.Bus, dir, name string, runs, turns int) (turnsResult, error) {
	before, err := lastSeq(ctx, b)
	if err != nil {
		return turnsResult{}, err
	}
	factsBefore, blobsBefore, err := storedBytes(ctx, b)
	if err != nil {
		return turnsResult{}, err
	}
	t0 := time.Now()
	if err := submitSuite(ctx, b, dir, name, runs, turns); err != nil {
		return turnsResult{}, err
	}
	if err := awaitReported(ctx, b, []string{name}, 5*time.Minute); err != nil {
		return turnsResult{}, err
	}
	el := time.Since(t0)
	after, err := lastSeq(ctx, b)
	if err != nil {
		return turnsResult{}, err
	}
	factsAfter, blobsAfter, err := storedBytes(ctx, b)
	if err != nil {
		return turnsResult{}, err
	}
	facts := after - before
	if min := uint64(runs * turns * turnFacts); facts < min {
		return turnsResult{}, fmt.Errorf("B2: %d facts committed, a complete suite has at least %d", facts, min)
	}
	return turnsResult{factsPerSec: float64(facts) / el.Seconds(), turnsPerSec: float64(runs*turns) / el.Seconds(),
		facts: facts, elapsed: el, factBytes: factsAfter - factsBefore, blobBytes: blobsAfter - blobsBefore}, nil
}

// storedBytes is what the FACTS stream and the blob bucket's stream hold,
// in bytes.
func storedBytes(ctx context.Context, b *bus.Bus) (facts, blobs uint64, err error) {
	for name, into := range map[string]*uint64{bus.FactsStream: &facts, "OBJ_" + bus.BlobBucket: &blobs} {
		s, err := b.JetStream().Stream(ctx, name)
		if err != nil {
			return 0, 0, fmt.Errorf("stream %s: %w", name, err)
		}
		*into = s.CachedInfo().State.Bytes
	}
	return facts, blobs, nil
}

// lastSeq is the FACTS stream's last sequence.
func lastSeq(ctx context.Context, b *bus.Bus) (uint64, error) {
	s, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		return 0, err
	}
	return s.CachedInfo().State.LastSeq, nil
}
