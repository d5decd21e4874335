package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
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
	// prevBytes and headerBytes are the mean bytes per fact of the
	// Factline-Prev header and of all headers.
	prevBytes, headerBytes float64
}

// benchTurns submits a suite of runs concurrent runs of turns turns each to
// the five services running in this process, and measures the facts
// committed per second from the submission to the meter's report, by the
// server's timestamps of the suite's facts (timeSuite).
func benchTurns(ctx context.Context, b *bus.Bus, dir, name string, runs, turns int) (turnsResult, error) {
	before, err := lastSeq(ctx, b)
	if err != nil {
		return turnsResult{}, err
	}
	factsBefore, blobsBefore, err := storedBytes(ctx, b)
	if err != nil {
		return turnsResult{}, err
	}
	if err := submitSuite(ctx, b, dir, name, runs, turns); err != nil {
		return turnsResult{}, err
	}
	if err := awaitReported(ctx, b, []string{name}, 5*time.Minute); err != nil {
		return turnsResult{}, err
	}
	el, err := timeSuite(ctx, b, name)
	if err != nil {
		return turnsResult{}, fmt.Errorf("B2: %w", err)
	}
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
	prev, hdr, err := headerBytes(ctx, b, name)
	if err != nil {
		return turnsResult{}, fmt.Errorf("B2 headers: %w", err)
	}
	return turnsResult{factsPerSec: float64(facts) / el.Seconds(), turnsPerSec: float64(runs*turns) / el.Seconds(),
		facts: facts, elapsed: el, factBytes: factsAfter - factsBefore, blobBytes: blobsAfter - blobsBefore,
		prevBytes: prev, headerBytes: hdr}, nil
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

// readOnly are the headers a direct get adds to a stored message.
var readOnly = map[string]bool{jetstream.StreamHeader: true, jetstream.SubjectHeader: true,
	jetstream.SequenceHeader: true, jetstream.TimeStampHeaer: true}

// headerSample bounds how many of a suite's facts headerBytes reads back.
const headerSample = 1000

// headerBytes reads back up to headerSample of a suite's facts (spread over
// the whole suite) and returns the mean bytes per fact of their Factline-Prev
// header and of all their headers (names and values, as stored). A read
// by direct get hands back four headers the stream never stored (which
// stream, subject, sequence and time): they are not counted.
func headerBytes(ctx context.Context, b *bus.Bus, suite string) (prev, all float64, err error) {
	var seqs []uint64
	if _, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite)}, func(r bus.Raw) error {
		seqs = append(seqs, r.Seq)
		return nil
	}); err != nil {
		return 0, 0, err
	}
	if len(seqs) == 0 {
		return 0, 0, fmt.Errorf("suite %s has no facts", suite)
	}
	st, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		return 0, 0, err
	}
	step := max(len(seqs)/headerSample, 1)
	n := 0
	for i := 0; i < len(seqs); i += step {
		m, err := st.GetMsg(ctx, seqs[i])
		if err != nil {
			return 0, 0, fmt.Errorf("get %d: %w", seqs[i], err)
		}
		for k, vs := range m.Header {
			if readOnly[k] {
				continue
			}
			for _, v := range vs {
				size := float64(len(k) + len(v) + len(": \r\n"))
				all += size
				if k == bus.HeaderPrev {
					prev += size
				}
			}
		}
		n++
	}
	return prev / float64(n), all / float64(n), nil
}
