package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestSampleMedianAndSpread(t *testing.T) {
	s := Sample{3, 1, 2}
	if s.Median() != 2 {
		t.Errorf("median of 3,1,2 = %v, want 2", s.Median())
	}
	if (Sample{4, 1, 3, 2}).Median() != 2.5 {
		t.Errorf("median of 4,1,3,2 = %v, want 2.5", Sample{4, 1, 3, 2}.Median())
	}
	if lo, hi := s.Spread(); lo != 1 || hi != 3 {
		t.Errorf("spread = %v–%v, want 1–3", lo, hi)
	}
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if p := percentile(d, 50); p != 50 {
		t.Errorf("p50 of 1..100 = %v, want 50", p)
	}
	if p := percentile(d, 99); p != 99 {
		t.Errorf("p99 of 1..100 = %v, want 99", p)
	}
}

func TestSpliceReplacesOnlyTheGeneratedPart(t *testing.T) {
	doc := Splice("# Title\n\nprose\n", "table 1\n")
	if !strings.HasPrefix(doc, "# Title\n\nprose\n\n"+BeginMarker) || !strings.Contains(doc, "table 1\n"+EndMarker) {
		t.Fatalf("first splice:\n%s", doc)
	}
	doc = Splice(doc+"\nafter\n", "table 2\n")
	if strings.Contains(doc, "table 1") || !strings.Contains(doc, "table 2") || !strings.HasSuffix(doc, "\nafter\n") || strings.Count(doc, BeginMarker) != 1 {
		t.Fatalf("second splice:\n%s", doc)
	}
}

// The filled stream must carry the run links bus.Append writes, or LoadRun
// (B5) would measure its slow fallback instead of its fast path.
func TestFillLinksEveryRun(t *testing.T) {
	ctx := testCtx(t)
	s, err := startServer(ctx, t.TempDir(), bus.SyncInterval, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if err := fill(ctx, s.b, 5000); err != nil {
		t.Fatal(err)
	}
	last, _ := lastSeq(ctx, s.b)
	if last != 5000 {
		t.Fatalf("stream holds %d messages, want 5000", last)
	}
	log, err := s.b.LoadRun(ctx, fillSuite, fillRun(37))
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != fillRunLen {
		t.Fatalf("run has %d facts, want %d", len(log.Records), fillRunLen)
	}
	st, err := s.b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < fillRunLen; i++ {
		r := log.Records[i]
		if r.Fact.Position != uint64(i+1) {
			t.Fatalf("fact %d has position %d", i, r.Fact.Position)
		}
		m, err := st.GetMsg(ctx, r.Seq)
		if err != nil {
			t.Fatal(err)
		}
		want := bus.ExpectLast(log.Records[i-1].Seq).Header()
		if got := m.Header.Get(bus.HeaderPrev); !strings.HasPrefix(got+",", want+",") {
			t.Fatalf("fact %d at %d links %q, want it to start with the previous fact's sequence %s", i, r.Seq, got, want)
		}
	}
}

func TestRunFactsAreValidAndCycleThroughATurn(t *testing.T) {
	want := []events.Kind{events.KindTurnStarted, events.KindModelReplied, events.KindDispatchIntended,
		events.KindDispatchComplete, events.KindTurnCompleted, events.KindStallObserved, events.KindStopDecided}
	for pos := uint64(1); pos <= 14; pos++ {
		f, err := runFact("s", "r", pos)
		if err != nil {
			t.Fatalf("position %d: %v", pos, err)
		}
		if k := f.Kind(); k != want[(pos-1)%turnFacts] {
			t.Errorf("position %d is %s, want %s", pos, k, want[(pos-1)%turnFacts])
		}
		data, err := events.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Decode(data); err != nil {
			t.Errorf("position %d does not decode: %v", pos, err)
		}
	}
}

func TestTurnLatenciesRunFromTurnStartToTheRunnersNextFact(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mk := func(pos uint64, ms int) stamped {
		f, err := runFact("s", "r", pos)
		if err != nil {
			t.Fatal(err)
		}
		return stamped{f, t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	var facts []stamped
	// Two turns: facts at positions 1–7 at 1–7ms, 8–14 at 18–24ms, and the
	// runner's fact after the second decision at 40ms.
	for p := uint64(1); p <= 7; p++ {
		facts = append(facts, mk(p, int(p)))
	}
	for p := uint64(8); p <= 14; p++ {
		facts = append(facts, mk(p, 10+int(p)))
	}
	end := mk(1, 40) // a runner fact after the last stop.decided
	facts = append(facts, end)
	got := turnLatencies(facts)
	if len(got) != 2 || got[0] != 17*time.Millisecond || got[1] != 22*time.Millisecond {
		t.Fatalf("latencies = %v, want [17ms 22ms]", got)
	}
}

func TestRSSOfThisProcess(t *testing.T) {
	v, err := rss(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if v < 1 || v > 1<<20 {
		t.Fatalf("RSS %v MiB is not plausible", v)
	}
}

// A miniature of the whole table: every part runs for real on small
// counts, and every row of the report is filled (B6 needs the factline
// binary and is left to cmd/factline-bench).
func TestSmallTableFillsEveryRow(t *testing.T) {
	ctx := testCtx(t)
	cfg := Config{Modes: []bus.Durability{bus.SyncInterval}, Reps: 1,
		AppendRounds: map[bus.Durability]int{bus.SyncInterval: 1},
		TurnRuns:     4, TurnTurns: 2, LatencyTurns: 3, FillFacts: 1000, Loads: 5,
		SweepRuns: []int{1, 3}, SweepInstances: []int{1, 2}, SweepTurns: 2, LongTurns: 49,
		Dir: t.TempDir(), Progress: testWriter{t}}
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Markdown(ThisMachine(), "go test")
	for _, row := range []string{"| B1 ", "| B2 end", "| B2 turns/s", "| B2 disk", "| B3 ", "| B4 ", "| B5 ", "| B7 ", "| B8 turn", "| B8 request blobs"} {
		if !strings.Contains(md, row) {
			t.Errorf("no %s row in\n%s", row, md)
		}
	}
	m := rep.Modes[0]
	if m.AppendFL.Median() <= 0 || m.AppendRaw.Median() <= 0 || m.Turns.Median() <= 0 || m.LatP50.Median() <= 0 ||
		m.RawP50.Median() <= 0 || m.ReplayFL.Median() <= 0 || m.ReplayRaw.Median() <= 0 || m.LoadP50.Median() <= 0 || m.GetP50.Median() <= 0 {
		t.Errorf("a figure is not positive: %+v", m)
	}
	if m.TurnRate.Median() <= 0 || m.ChainRate.Median() <= 0 || m.FactBytes.Median() <= 0 || m.PrevBytes.Median() <= 0 || m.HeaderBytes.Median() < m.PrevBytes.Median() || m.LongEarly.Median() <= 0 || m.LongLate.Median() <= 0 || m.LongBlobBytes.Median() <= 0 {
		t.Errorf("a figure of issue 24's rows is not positive: %+v", m)
	}
	if len(m.Sweep) != 3 || m.Sweep[2].Point != (sweepPoint{Runs: 3, Instances: 2}) {
		t.Errorf("B7 measured %+v, want 1 and 3 runs with one instance, then 3 runs with two", m.Sweep)
	}
	for _, sw := range m.Sweep {
		if sw.Rate.Median() <= 0 {
			t.Errorf("B7 %s: %v turns/s", sw.Point, sw.Rate)
		}
	}
}

// The raw chain plays every run to its end at once: each run's turns, and
// the latencies of the first run.
func TestRawChainPlaysManyRunsAtOnce(t *testing.T) {
	ctx := testCtx(t)
	s, err := startServer(ctx, t.TempDir(), bus.SyncInterval, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	res, err := rawChain(ctx, s.b, "t", 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.turns != 15 || len(res.latencies) != 3 || res.turnsPerSec() <= 0 {
		t.Fatalf("turns %d, latencies %v, rate %v; want 15 turns and 3 latencies", res.turns, res.latencies, res.turnsPerSec())
	}
	last, err := lastSeq(ctx, s.b)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(5 * (3*turnFacts + 1)); last != want {
		t.Fatalf("the chain appended %d facts, want %d", last, want)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
