package bus_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// The append benchmarks measure factline and a raw JetStream publish of the
// same bytes with the same headers, on the same server in the same run,
// alternating in rounds so that machine noise hits both alike. They report
// each side's rate and the ratio factline/raw, which is the figure to watch.

const benchRuns = 1000

// rawMsg builds what bus.Append would publish for f, for the baseline.
func rawMsg(f events.Fact, prev string) *nats.Msg {
	data, _ := events.Encode(f)
	subj, _ := f.Subject()
	m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	if prev != "" {
		m.Header.Set(bus.HeaderPrev, prev)
	}
	return m
}

func reportRatio(b *testing.B, facts int, fl, raw time.Duration) {
	flRate := float64(facts) / fl.Seconds()
	rawRate := float64(facts) / raw.Seconds()
	b.ReportMetric(flRate, "factline-facts/s")
	b.ReportMetric(rawRate, "raw-msgs/s")
	b.ReportMetric(flRate/rawRate, "ratio")
}

// durabilityModes runs a benchmark once per fsync mode: the default
// (fsync before ack) and the opt-in interval mode.
func durabilityModes(b *testing.B, fn func(*testing.B, *bus.Bus)) {
	for _, mode := range []bus.Durability{bus.SyncAlways, bus.SyncInterval} {
		b.Run("fsync="+string(mode), func(b *testing.B) {
			bb, _ := bustest.StartWith(b, bus.EmbeddedConfig{Durability: mode})
			fn(b, bb)
		})
	}
}

// BenchmarkAppendSync: one writer, one run, each append waits for its ack.
func BenchmarkAppendSync(b *testing.B) { durabilityModes(b, benchAppendSync) }

func benchAppendSync(b *testing.B, bb *bus.Bus) {
	ctx := testCtxTB(b)
	js := bb.JetStream()
	var fl, raw time.Duration
	var flExpect bus.Expect
	var rawLast uint64
	facts := 0
	for i := 0; b.Loop(); i++ {
		pos := uint64(i + 1)
		f := bustest.Turn(b, "bench", "sync-fl", pos, uint32(pos))
		t0 := time.Now()
		recs, err := bb.Append(ctx, flExpect, bus.Pending{Fact: f})
		fl += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		flExpect = flExpect.Then(recs[0].Seq)

		g := bustest.Turn(b, "bench", "sync-raw", pos, uint32(pos))
		m := rawMsg(g, "")
		t0 = time.Now()
		ack, err := js.PublishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(rawLast, "fact.bench.sync-raw.>"), jetstream.WithMsgID(g.ID.String()))
		raw += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		rawLast = ack.Sequence
		facts++
	}
	reportRatio(b, facts, fl, raw)
}

// BenchmarkAppendPipelined: appends to 1,000 runs in flight at once; each
// round appends one fact to every run, then waits for all acks.
func BenchmarkAppendPipelined(b *testing.B) { durabilityModes(b, benchAppendPipelined) }

func benchAppendPipelined(b *testing.B, bb *bus.Bus) {
	ctx := testCtxTB(b)
	js := bb.JetStream()
	flExpect := make([]bus.Expect, benchRuns)
	rawExpect := make([]bus.Expect, benchRuns)
	var fl, raw time.Duration
	facts := 0
	// Facts are made outside the timed sections: both sides publish the
	// same kind of bytes; building them is the caller's cost.
	mk := func(prefix string, round int) []events.Fact {
		out := make([]events.Fact, benchRuns)
		for r := range benchRuns {
			out[r] = bustest.Turn(b, "bench", fmt.Sprintf("%s%d", prefix, r), uint64(round+1), uint32(round+1))
		}
		return out
	}
	for round := 0; b.Loop(); round++ {
		ff := mk("fl", round)
		t0 := time.Now()
		pend := make([]*bus.AsyncAppend, benchRuns)
		for r, f := range ff {
			a, err := bb.AppendAsync(flExpect[r], bus.Pending{Fact: f})
			if err != nil {
				b.Fatal(err)
			}
			pend[r] = a
		}
		for r, a := range pend {
			rec, err := a.Wait(ctx)
			if err != nil {
				b.Fatal(err)
			}
			flExpect[r] = flExpect[r].Then(rec.Seq)
		}
		fl += time.Since(t0)

		rr := mk("raw", round)
		msgs := make([]*nats.Msg, benchRuns)
		for r, f := range rr {
			msgs[r] = rawMsg(f, rawExpect[r].Header())
		}
		t0 = time.Now()
		futs := make([]jetstream.PubAckFuture, benchRuns)
		for r, m := range msgs {
			fut, err := js.PublishMsgAsync(m,
				jetstream.WithExpectLastSequenceForSubject(rawExpect[r].Last, fmt.Sprintf("fact.bench.raw%d.>", r)),
				jetstream.WithMsgID(rr[r].ID.String()))
			if err != nil {
				b.Fatal(err)
			}
			futs[r] = fut
		}
		for r, fut := range futs {
			select {
			case ack := <-fut.Ok():
				rawExpect[r] = rawExpect[r].Then(ack.Sequence)
			case err := <-fut.Err():
				b.Fatal(err)
			}
		}
		raw += time.Since(t0)
		facts += benchRuns
	}
	reportRatio(b, facts, fl, raw)
}
