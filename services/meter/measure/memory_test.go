package measure

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/factline/factline/events"
)

// foldDecoded folds a suite of ten cases under one treatment, trials
// trials each, into a Log the way a reader of the log does: every fact
// encoded to its wire form and decoded again before it is applied, so that
// each holds strings and slices of its own, as a fact read from the
// stream does (facts built in memory would share their constants and
// hide what a Log keeps of each).
func foldDecoded(t testing.TB, trials uint32) *Log {
	t.Helper()
	var cs []string
	for c := 1; c <= 10; c++ {
		cs = append(cs, fmt.Sprintf("c%d", c))
	}
	sub := submitted(cs, []string{"t"}, trials)
	l := NewLog("s")
	pos := map[string]uint64{}
	n := 0
	apply := func(run string, b events.Body, owner events.Owner) {
		pos[run]++
		n++
		m := events.Meta{Suite: "s", Run: run, TaskGeneration: 1, Position: pos[run],
			Producer: events.Producer{Service: owner, Instance: "test"}, At: time.Unix(int64(n), 0)}
		if run == events.SuiteScope {
			m.TaskGeneration = 0
		}
		f, err := events.NewFact(m, b)
		if err != nil {
			t.Fatal(err)
		}
		data, err := events.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		g, err := events.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		l.Apply(g)
	}
	apply(events.SuiteScope, sub, events.OwnerSubmitter)
	// An identity of a few components, as suites.AgentIdentity makes.
	comps := []events.Component{{Name: "capabilities", Value: string(d("caps"))}, {Name: "case", Value: string(d("case"))},
		{Name: "harness", Value: "0.1.0"}, {Name: "model", Value: `{"provider":"scripted","scripts":"s"}`},
		{Name: "policies", Value: string(d("policies"))}}
	one, cost := uint64(105), uint64(1)
	for m := range Members(sub) {
		apply(m.Run, events.RunRequested{Case: m.Case, CaseDigest: d("case:" + m.Case), Treatment: m.Treatment,
			TreatmentDigest: d("treatment:t"), Trial: m.Trial, Identity: d("identity"), Components: comps,
			Budget: events.Budget{Steps: 2}}, events.OwnerMeter)
		// The runner claims the run as an identity of its own (its
		// containment among its components), as factline's runners do.
		apply(m.Run, events.RunClaimed{Runner: "runner-1", Lease: 1, Identity: d("claimed identity")}, events.OwnerRunner)
		apply(m.Run, events.ModelReplied{Turn: 1, Provider: "scripted", Text: "Done.", Calls: []events.ToolCall{},
			Usage: &events.Usage{InputTokens: 100, OutputTokens: 5, Cost: &cost}}, events.OwnerRunner)
		apply(m.Run, events.CandidateSealed{SnapshotDigest: d(m.Run)}, events.OwnerRunner)
		apply(m.Run, events.RunEnded{Status: events.RunDone, Reason: "the agent said it was done",
			Spent: events.Spent{Steps: 1, Tokens: &one, Cost: &cost, Millis: 12}, Steps: 1,
			LastEvidence: []events.EvidenceRef{events.EvidenceRef(m.Run + "/t1/reply")}}, events.OwnerRunner)
		apply(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: 1,
			Result: events.VerdictOK(), Vetoes: []events.GradeVeto{}, Instruments: []events.InstrumentResult{{Instrument: "tests",
				Version: "1", Required: true, Outcome: events.InstrumentPassed, Detail: "exit 0: 12 tests passed in 0.4s",
				Evidence: []events.EvidenceRef{events.EvidenceRef(m.Run + "/grade/tests")}}}}}, events.OwnerGrader)
	}
	return l
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// maxLogBytesARun bounds what a folded Log and the report built from it
// hold a planned attempt (docs/benchmarks.md#suite-size): its report row
// and a packed record of what the row is made of (Attempt), never the
// facts as decoded, nor a copy a run of what the runs of a pair repeat:
// 1,234 bytes a run (1,293-1,318 under -race) with each run's facts'
// bodies kept compact, ~560 (~620) packed.
const maxLogBytesARun = 700

// maxFoldBytesARun bounds what a Log alone holds a run: what the meter
// holds of every run ended of a suite until it reports it. Packed, ~170
// bytes (the Attempt, its map entry and run ID); 844 with each fact's
// body kept compact.
const maxFoldBytesARun = 200

// A Log keeps of each attempt what its report row needs, not every fact
// as it was decoded: the Log and the report of a suite of ten times the
// runs hold no more than maxLogBytesARun more a run. A Log that kept each
// decoded fact (a verdict's instrument details and evidence, a run's last
// evidence, an identity's components copied into every run, a map of
// verdicts a run) made the report of a 50,000-run suite peak at 1.2 GB.
func TestLogHoldsLittleARun(t *testing.T) {
	small, large := heldAfter(t, 10, 100, func(l *Log) any { return Build(l) })
	perRun := (int64(large) - int64(small)) / 900
	t.Logf("Log and report: 100 runs %d KiB, 1,000 runs %d KiB: %d bytes a run", small>>10, large>>10, perRun)
	if perRun > maxLogBytesARun {
		t.Errorf("a Log and its report hold %d bytes a run, more than %d", perRun, maxLogBytesARun)
	}
}

// A suite's fold holds a run in no more than maxFoldBytesARun: the
// record a run (Attempt) is numbers and pointers to the request, end and
// grade the runs of its pair share, and its sealed snapshot's 32 bytes.
// The fold of 5,000 runs against that of 1,000.
func TestTheFoldHoldsLittleARun(t *testing.T) {
	small, large := heldAfter(t, 100, 500, func(*Log) any { return nil })
	perRun := (int64(large) - int64(small)) / 4000
	t.Logf("fold: 1,000 runs %d KiB, 5,000 runs %d KiB: %d bytes a run", small>>10, large>>10, perRun)
	if perRun > maxFoldBytesARun {
		t.Errorf("a Log holds %d bytes a run, more than %d", perRun, maxFoldBytesARun)
	}
}

// heldAfter returns the live heap a fold of a suite of small and of
// large trials holds (foldDecoded), with what keep makes of each held
// beside it.
func heldAfter(t *testing.T, small, large uint32, keep func(*Log) any) (uint64, uint64) {
	t.Helper()
	held := func(trials uint32) uint64 {
		before := liveHeap()
		l := foldDecoded(t, trials)
		kept := keep(l)
		after := liveHeap()
		if r, ok := kept.(Report); ok && (!r.Complete || len(r.Attempts) != int(trials)*10) {
			t.Fatalf("%d trials: complete %v with %d attempts", trials, r.Complete, len(r.Attempts))
		}
		if len(l.Runs) != int(trials)*10 {
			t.Fatalf("%d trials: %d runs folded", trials, len(l.Runs))
		}
		runtime.KeepAlive(l)
		runtime.KeepAlive(kept)
		return after - min(before, after)
	}
	return held(small), held(large)
}
