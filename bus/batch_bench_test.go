package bus_test

import (
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// BenchmarkAppendPair weighs a step's two facts committed as one atomic
// batch against the same two appended one after the other, alternating on
// one server so that machine noise hits both alike; ratio is the batch's
// pairs per second over the sequential ones'.
func BenchmarkAppendPair(b *testing.B) {
	for _, mode := range []bus.Durability{bus.SyncAlways, bus.SyncInterval} {
		b.Run("fsync="+string(mode), func(b *testing.B) {
			srv := bustest.Server(b, bus.EmbeddedConfig{Durability: mode})
			benchAppendPair(b, bustest.OpenWith(b, srv, bus.Config{AtomicBatchesOnOneReplica: true}))
		})
	}
}

func benchAppendPair(b *testing.B, bb *bus.Bus) {
	ctx := testCtxTB(b)
	if !bb.AtomicBatches() {
		b.Fatal("FACTS made by this bus does not take atomic batches")
	}
	var batched, seq time.Duration
	var bExpect, sExpect bus.Expect
	pairs := 0
	for i := 0; b.Loop(); i++ {
		pos := uint64(2*i + 1)
		p := []bus.Pending{{Fact: bustest.Turn(b, "bench", "pair-batch", pos, uint32(pos))}, {Fact: bustest.Turn(b, "bench", "pair-batch", pos+1, uint32(pos+1))}}
		t0 := time.Now()
		recs, err := bb.AppendBatch(ctx, bExpect, p...)
		batched += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		bExpect = bExpect.Then(recs[0].Seq).Then(recs[1].Seq)

		q := []bus.Pending{{Fact: bustest.Turn(b, "bench", "pair-seq", pos, uint32(pos))}, {Fact: bustest.Turn(b, "bench", "pair-seq", pos+1, uint32(pos+1))}}
		t0 = time.Now()
		recs, err = bb.Append(ctx, sExpect, q...)
		seq += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		sExpect = sExpect.Then(recs[0].Seq).Then(recs[1].Seq)
		pairs++
	}
	b.ReportMetric(float64(pairs)/batched.Seconds(), "batch-pairs/s")
	b.ReportMetric(float64(pairs)/seq.Seconds(), "seq-pairs/s")
	b.ReportMetric(seq.Seconds()/batched.Seconds(), "ratio")
}
