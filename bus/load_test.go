package bus_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// appendRun appends n facts to a run, chaining expectations.
func appendRun(t testing.TB, b *bus.Bus, suite, run string, from uint64, n int, expect bus.Expect) bus.Expect {
	ctx := testCtxTB(t)
	for i := range n {
		pos := from + uint64(i)
		recs, err := b.Append(ctx, expect, bus.Pending{Fact: bustest.Turn(t, suite, run, pos, uint32(pos))})
		if err != nil {
			t.Fatal(err)
		}
		expect = expect.Then(recs[0].Seq)
	}
	return expect
}

func TestLoadRunReturnsOnlyItsFactsInOrder(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	lasts := map[string]bus.Expect{}
	// Interleave three runs so that each run's facts are scattered.
	for round := range 5 {
		for _, run := range []string{"r1", "r2", "r3"} {
			lasts[run] = appendRun(t, b, "s", run, uint64(round+1), 1, lasts[run])
		}
	}
	log, err := b.LoadRun(ctx, "s", "r2")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != 5 {
		t.Fatalf("loaded %d facts, want 5", len(log.Records))
	}
	for i, r := range log.Records {
		if r.Fact.Run != "r2" || r.Fact.Position != uint64(i+1) {
			t.Fatalf("record %d is %s position %d", i, r.Fact.Run, r.Fact.Position)
		}
		if i > 0 && r.Seq <= log.Records[i-1].Seq {
			t.Fatalf("records out of stream order at %d", i)
		}
	}
	if log.LastSeq != lasts["r2"].Last {
		t.Fatalf("LastSeq = %d, want %d", log.LastSeq, lasts["r2"].Last)
	}
	empty, err := b.LoadRun(ctx, "s", "nobody")
	if err != nil || len(empty.Records) != 0 || empty.LastSeq != 0 {
		t.Fatalf("empty run: %+v, %v", empty, err)
	}
}

// A run longer than one batched direct get is read whole.
func TestLoadRunLongerThanOneBatch(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	const n = 1300
	last := appendRun(t, b, "s", "long", 1, n, bus.Expect{})
	log, err := b.LoadRun(ctx, "s", "long")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != n || log.LastSeq != last.Last {
		t.Fatalf("loaded %d facts to %d, want %d to %d", len(log.Records), log.LastSeq, n, last.Last)
	}
}

func TestRunCacheFetchesOnlyNewFacts(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cache := b.NewRunLogs(2)
	last := appendRun(t, b, "s", "r1", 1, 3, bus.Expect{})
	log, err := cache.Load(ctx, "s", "r1")
	if err != nil || len(log.Records) != 3 {
		t.Fatalf("first load: %d facts, %v", len(log.Records), err)
	}
	appendRun(t, b, "s", "r1", 4, 2, last)
	log2, err := cache.Load(ctx, "s", "r1")
	if err != nil || len(log2.Records) != 5 {
		t.Fatalf("second load: %d facts, %v", len(log2.Records), err)
	}
	if log2.Records[0].Fact.ID != log.Records[0].Fact.ID {
		t.Fatal("cached prefix changed")
	}
	// What the caller holds must not change under it.
	if len(log.Records) != 3 {
		t.Fatal("earlier result grew")
	}
	for _, run := range []string{"r2", "r3"} {
		if _, err := cache.Load(ctx, "s", run); err != nil {
			t.Fatal(err)
		}
	}
	if cache.Len() != 2 {
		t.Fatalf("cache holds %d runs, bound is 2", cache.Len())
	}
}

// A message on a run's subject that is not a fact is reported, still counts
// for the run's last sequence, and does not hide the good facts.
func TestLoadRunReportsUndecodable(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	last := appendRun(t, b, "s", "r1", 1, 1, bus.Expect{})
	ack, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: "fact.s.r1.turn.completed", Data: []byte("not msgpack")})
	if err != nil {
		t.Fatal(err)
	}
	appendRun(t, b, "s", "r1", 2, 1, bus.ExpectLast(ack.Sequence))
	log, err := b.LoadRun(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != 2 || len(log.Bad) != 1 {
		t.Fatalf("got %d good and %d bad, want 2 and 1", len(log.Records), len(log.Bad))
	}
	if log.Bad[0].Seq != last.Last+1 || log.Bad[0].Err == nil {
		t.Fatalf("bad record = %+v", log.Bad[0])
	}
}

// verdictFact returns a passing grade.verdict of a run, as only the grader
// may write it.
func verdictFact(t testing.TB, suite, run string, pos uint64) events.Fact {
	t.Helper()
	f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: pos,
		Producer: events.Producer{Service: events.OwnerGrader, Instance: "forger"}},
		events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: run, SnapshotID: events.DigestOf([]byte(run)), Revision: 9,
			Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
			Result:      events.VerdictOK()}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A fact stored under a subject that names another kind or run (a runner
// forging a grade on its own run.ended subject, which the server lets it
// publish on) is no fact of the run: loading the run, fresh or through the
// cache, leaves it out of the records and reports it as bad with the
// mismatch named, and the run's next position ignores it.
func TestLoadRunRefusesFactsThatDoNotMatchTheirSubject(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	cache := b.NewRunLogs(4)
	expect := appendRun(t, b, "s", "r1", 1, 1, bus.Expect{})
	if _, err := cache.Load(ctx, "s", "r1"); err != nil {
		t.Fatal(err)
	}
	verdict, _ := events.Encode(verdictFact(t, "s", "r1", 2))
	other, _ := events.Encode(bustest.Claim(t, "s", "r9", 2))
	var forged []uint64
	for subj, data := range map[string][]byte{"fact.s.r1.run.ended": verdict, "fact.s.r1.run.claimed": other} {
		ack, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: subj, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		forged = append(forged, ack.Sequence)
		expect = bus.ExpectLast(ack.Sequence)
	}
	slices.Sort(forged)
	appendRun(t, b, "s", "r1", 2, 1, expect)
	fresh, err := b.LoadRun(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	cached, err := cache.Load(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	for name, log := range map[string]bus.RunLog{"fresh": fresh, "cached": cached} {
		if len(log.Records) != 2 || log.NextPosition() != 3 {
			t.Fatalf("%s load: %d facts, next position %d; want the 2 real ones and 3", name, len(log.Records), log.NextPosition())
		}
		for _, r := range log.Records {
			if r.Fact.Kind() != events.KindTurnCompleted {
				t.Fatalf("%s load holds a forged %s", name, r.Fact.Kind())
			}
		}
		if len(log.Bad) != 2 {
			t.Fatalf("%s load: %d bad, want the 2 forged", name, len(log.Bad))
		}
		for i, bad := range log.Bad {
			var mm *events.SubjectMismatchError
			if bad.Seq != forged[i] || !errors.As(bad.Err, &mm) {
				t.Fatalf("%s load: bad record %d = %+v", name, i, bad)
			}
		}
	}
}

// A writer that links a fact past a message it did not know of leaves a
// gap the links cannot show; the positions do, and the load falls back to
// the scan and still returns every fact.
func TestLoadRunDetectsGapInLinks(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	first := appendRun(t, b, "s", "r1", 1, 1, bus.Expect{})
	publish := func(pos uint64, prev string, expect uint64) uint64 {
		f := bustest.Turn(t, "s", "r1", pos, uint32(pos))
		data, _ := events.Encode(f)
		m := &nats.Msg{Subject: "fact.s.r1.turn.completed", Data: data, Header: nats.Header{}}
		if prev != "" {
			m.Header.Set(bus.HeaderPrev, prev)
		}
		ack, err := b.JetStream().PublishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(expect, "fact.s.r1.>"))
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	second := publish(2, "", first.Last)                   // written without links
	publish(3, strconv.FormatUint(first.Last, 10), second) // links past it
	log, err := b.LoadRun(ctx, "s", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != 3 {
		t.Fatalf("loaded %d facts, want 3", len(log.Records))
	}
}

// loadBenchStream fills a stream with `others` facts of `active` other runs
// and one run of `mine` facts. With spread, the run's facts are spaced
// evenly through the whole stream (the worst case: every file block holds
// one); otherwise they all land within the last `active`*`mine` messages,
// as when the run was one of `active` runs in flight at once.
func loadBenchStream(b *testing.B, bb *bus.Bus, others, active, mine int, spread bool) {
	js := bb.JetStream()
	every := others / mine
	start := 0
	if !spread {
		every = active
		start = others - active*mine
	}
	pos := uint64(0)
	var last bus.Expect
	for i := range others {
		f := bustest.Turn(b, "bench", fmt.Sprintf("other%d", i%active), uint64(i/active+1), 1)
		data, _ := events.Encode(f)
		subj, _ := f.Subject()
		if _, err := js.PublishAsync(subj, data); err != nil {
			b.Fatal(err)
		}
		if i >= start && (i-start)%every == 0 && pos < uint64(mine) {
			<-js.PublishAsyncComplete()
			pos++
			last = appendRun(b, bb, "bench", "mine", pos, 1, last)
		}
	}
	<-js.PublishAsyncComplete()
}

// BenchmarkLoadRun loads one run of 50 facts from a stream that also holds
// 100,000 facts of other runs, alternating with two baselines on the same
// stream: one direct get of a single message, and the same run loaded by a
// filtered server-side scan (what LoadRun falls back to without its run
// links). It reports p50 and p99 of each and the ratio of the p50s of
// LoadRun and one direct get.
func BenchmarkLoadRun(b *testing.B) {
	b.Run("spread", func(b *testing.B) { benchLoadRun(b, true) })
	b.Run("clustered", func(b *testing.B) { benchLoadRun(b, false) })
}

func benchLoadRun(b *testing.B, spread bool) {
	bb, _ := bustest.Start(b)
	loadBenchStream(b, bb, 100_000, 200, 50, spread)
	ctx := testCtxTB(b)
	s, err := bb.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		b.Fatal(err)
	}
	var loads, gets, scans []time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		log, err := bb.LoadRun(ctx, "bench", "mine")
		loads = append(loads, time.Since(t0))
		if err != nil || len(log.Records) != 50 {
			b.Fatalf("%d facts, %v", len(log.Records), err)
		}
		t0 = time.Now()
		if _, err := s.GetLastMsgForSubject(ctx, "fact.bench.mine.turn.completed"); err != nil {
			b.Fatal(err)
		}
		gets = append(gets, time.Since(t0))
		if i%10 == 0 { // the scan is slow; sample it
			t0 = time.Now()
			if log, err := bb.LoadRunByScan(ctx, "bench", "mine"); err != nil || len(log.Records) != 50 {
				b.Fatalf("scan: %d facts, %v", len(log.Records), err)
			}
			scans = append(scans, time.Since(t0))
		}
	}
	lp50, lp99 := percentiles(loads)
	gp50, gp99 := percentiles(gets)
	sp50, sp99 := percentiles(scans)
	b.ReportMetric(float64(lp50.Microseconds()), "load-p50-µs")
	b.ReportMetric(float64(lp99.Microseconds()), "load-p99-µs")
	b.ReportMetric(float64(gp50.Microseconds()), "get-p50-µs")
	b.ReportMetric(float64(gp99.Microseconds()), "get-p99-µs")
	b.ReportMetric(float64(sp50.Microseconds()), "scan-p50-µs")
	b.ReportMetric(float64(sp99.Microseconds()), "scan-p99-µs")
	b.ReportMetric(float64(lp50)/float64(gp50), "p50-ratio")
}

// BenchmarkLoadRunLinks weighs how many run links a fact carries: for 8,
// 16 and 32 links it loads, cold, one run of 420 facts (a 60-turn run)
// written among 199 other runs in flight, and reports the load's p50 and
// p99 and the mean bytes of the Factline-Prev header per fact (name, value
// and separators, as stored).
func BenchmarkLoadRunLinks(b *testing.B) {
	for _, depth := range []int{8, 16, 32} {
		b.Run(fmt.Sprintf("links=%d", depth), func(b *testing.B) {
			defer bus.SetPrevDepth(depth)()
			bb, _ := bustest.Start(b)
			const mine, active = 420, 200
			loadBenchStream(b, bb, mine*active, active, mine, false)
			ctx := testCtxTB(b)
			var loads []time.Duration
			var log bus.RunLog
			for b.Loop() {
				t0 := time.Now()
				var err error
				log, err = bb.LoadRun(ctx, "bench", "mine")
				loads = append(loads, time.Since(t0))
				if err != nil || len(log.Records) != mine {
					b.Fatalf("%d facts, %v", len(log.Records), err)
				}
			}
			s, err := bb.JetStream().Stream(ctx, bus.FactsStream)
			if err != nil {
				b.Fatal(err)
			}
			var header int
			for _, r := range log.Records {
				m, err := s.GetMsg(ctx, r.Seq)
				if err != nil {
					b.Fatal(err)
				}
				if v := m.Header.Get(bus.HeaderPrev); v != "" {
					header += len(bus.HeaderPrev) + len(": \r\n") + len(v)
				}
			}
			p50, p99 := percentiles(loads)
			b.ReportMetric(float64(p50.Microseconds()), "load-p50-µs")
			b.ReportMetric(float64(p99.Microseconds()), "load-p99-µs")
			b.ReportMetric(float64(header)/mine, "prev-B/fact")
		})
	}
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}
