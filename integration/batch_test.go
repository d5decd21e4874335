package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// On a three-node cluster FACTS has three replicas and a decision of
// several facts goes as one atomic batch (bus.AppendBatch): it lands whole
// at consecutive sequences on every replica, loads by its links, and of
// two writers on one expectation exactly one wins.
func TestAtomicBatchesOnTheCluster(t *testing.T) {
	// Serial: run beside the parallel tests at load ~38, LoadRun once
	// read 36 of the run's 40 acknowledged facts from the cluster.
	b, _ := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !b.AtomicBatches() {
		t.Fatal("a bus on three replicas does not commit atomic batches")
	}
	pending := func(run string, pos uint64, n int) []bus.Pending {
		var out []bus.Pending
		for i := range n {
			p := pos + uint64(i)
			out = append(out, bus.Pending{Fact: bustest.Turn(t, "s", run, p, uint32(p))})
		}
		return out
	}
	var want []bus.Pending
	var expect, other bus.Expect
	var took time.Duration
	for i := range 20 {
		batch := pending("r", uint64(2*i+1), 2)
		// Another run's fact between the run's batches.
		o, err := b.Append(ctx, other, pending("other", uint64(i+1), 1)...)
		if err != nil {
			t.Fatal(err)
		}
		other = other.Then(o[0].Seq)
		t0 := time.Now()
		recs, err := b.AppendBatch(ctx, expect, batch...)
		took += time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		if recs[1].Seq != recs[0].Seq+1 {
			t.Fatalf("batch %d stored at %d and %d, not consecutive", i, recs[0].Seq, recs[1].Seq)
		}
		expect = expect.Then(recs[0].Seq).Then(recs[1].Seq)
		want = append(want, batch...)
	}
	t.Logf("20 batches of two facts: %v each", took/20)
	log, err := b.LoadRun(ctx, "s", "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != len(want) {
		t.Fatalf("the run holds %d facts, want %d", len(log.Records), len(want))
	}
	for i, r := range log.Records {
		if r.Fact.ID != want[i].Fact.ID {
			t.Fatalf("fact %d is %s, want %s", i, r.Fact.ID, want[i].Fact.ID)
		}
	}

	// Two writers on the same expectation: one batch wins whole.
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for w := range 2 {
		batch := pending("r", log.NextPosition(), 2)
		wg.Go(func() { _, errs[w] = b.AppendBatch(ctx, log.Expect(), batch...) })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("two batches on one expectation: %v and %v; want exactly one to win", errs[0], errs[1])
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, bus.ErrConflict) {
			t.Fatalf("the losing batch: %v, want a conflict", err)
		}
	}
	after, err := b.LoadRun(ctx, "s", "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Records) != len(want)+2 {
		t.Fatalf("after the race the run holds %d facts, want %d", len(after.Records), len(want)+2)
	}
}
