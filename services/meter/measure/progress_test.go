package measure

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/factline/factline/events"
)

// earlierIn reads a run's facts before fact i back from the test's log,
// counting the reads.
func earlierIn(facts []events.Fact, i int, reads *int) Earlier {
	return func(run string) ([]events.Fact, error) {
		*reads++
		var out []events.Fact
		for _, f := range facts[:i] {
			if f.Run == run {
				out = append(out, f)
			}
		}
		return out, nil
	}
}

// reportTally is what the report says a Counter's tally must be.
func reportTally(r Report) Tally {
	var want Tally
	for _, tr := range r.Treatments {
		want.Started += tr.Started
		want.Ended += tr.Ended
		want.Graded += tr.Graded
		want.Passed += tr.Passed
		want.Excluded += tr.Excluded
		want.Settled += tr.Planned - tr.Awaiting - tr.Disputed
	}
	return want
}

// The progress line counts as the report counts: after every fact of a
// suite, the Counter's tally equals the report's sums over treatments. The
// suite has what a naive count of grade.verdict facts gets wrong: excluded
// runs graded passed (a cancel, a harness error), pending, invalid and
// abstained grades, a disputed one, a regrade of a run long settled, a
// retry, and runs still going.
func TestProgressCountsAsTheReportCounts(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2", "c3"}, []string{"A", "B"}, 2))
	l.attempt("c1", "A", 1, events.RunDone, u64(1), pass)
	l.attempt("c1", "A", 2, events.RunDone, u64(1), fail)
	l.attempt("c2", "A", 1, events.RunCancelled, u64(1), pass) // excluded, graded passed
	l.attempt("c2", "A", 2, events.RunErrored, nil, pass)      // harness error: excluded
	l.attempt("c3", "A", 1, events.RunDone, u64(1), vr(events.VerdictWaiting("lint")))
	l.attempt("c3", "A", 2, events.RunDone, u64(1), vr(events.VerdictNoAnswer("none")))
	l.attempt("c1", "B", 1, events.RunDone, u64(1), vr(events.VerdictAbstain("judge down")))
	l.attempt("c1", "B", 2, events.RunDone, u64(1), pass)
	l.regrade("c1", "B", 2, 2, events.VerdictFail(), events.GradeConflict{Revision: 2, ConflictsWith: 1, Instrument: "tests", Reason: "r"})
	l.regrade("c1", "A", 1, 2, events.VerdictFail())     // settled long ago: read back
	l.attempt("c2", "B", 1, events.RunDone, u64(1), nil) // ended, awaiting its grade
	m := l.member("c2", "B", 2)
	l.add(m.Run, events.RunRequested{Case: "c2", CaseDigest: d("case:c2"), Treatment: "B", TreatmentDigest: d("treatment:B"), Trial: 2}, events.OwnerMeter)
	l.add(m.Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner) // running
	// The harness error is retried; the retry replaces it.
	m = l.member("c2", "A", 2)
	retry := RetryRunID(m.Run, 2)
	l.add(retry, events.RunRequested{Case: "c2", CaseDigest: d("case:c2"), Treatment: "A", TreatmentDigest: d("treatment:A"), Trial: 2, RetryOf: m.Run}, events.OwnerMeter)
	l.add(retry, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
	// A run nobody planned counts nowhere, nor one that names a planned
	// attempt under another run's ID.
	l.add("stray", events.RunRequested{Case: "c9", CaseDigest: d("case:c9"), Treatment: "A", TreatmentDigest: d("treatment:A"), Trial: 1}, events.OwnerMeter)
	l.add("stray", events.RunEnded{Status: events.RunDone, Reason: "r"}, events.OwnerRunner)
	l.add("posing", events.RunRequested{Case: "c3", CaseDigest: d("case:c3"), Treatment: "B", TreatmentDigest: d("treatment:B"), Trial: 1}, events.OwnerMeter)
	l.add("posing", events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)

	c := NewCounter("s")
	lg := NewLog("s")
	reads := 0
	for i, f := range l.facts {
		if err := c.Apply(f, earlierIn(l.facts, i, &reads)); err != nil {
			t.Fatal(err)
		}
		lg.Apply(f)
		r := Build(lg)
		if got, want := c.Tally(), reportTally(r); got != want {
			t.Fatalf("after fact %d (%s of %s): progress %+v, report %+v", i+1, f.Kind(), f.Run, got, want)
		}
		if c.Complete() != r.Complete {
			t.Fatalf("after fact %d (%s of %s): counter complete %v, report complete %v", i+1, f.Kind(), f.Run, c.Complete(), r.Complete)
		}
	}
	if got := c.Tally(); got.Graded != 2 || got.Passed != 0 || got.Excluded != 1 {
		t.Fatalf("final tally %+v, want 2 graded (c1/A/1 and 2 failed), none passed, 1 excluded", got)
	}
	if reads == 0 {
		t.Error("the regrade of a settled run was counted without reading the run back")
	}
	// Held: the disputed run, the one awaiting its grade, the two running.
	if n := c.InFlight(); n != 4 {
		t.Errorf("%d runs held, want the 4 not settled", n)
	}
}

// A Counter holds the facts of the runs not settled only: after a suite
// whose every run settled, what it holds does not grow with the suite's
// runs beyond the few bytes per planned attempt it keeps.
func TestACounterLetsSettledRunsGo(t *testing.T) {
	held := func(trials uint32) uint64 {
		l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A", "B"}, trials))
		for _, m := range Roster(l.sub) {
			l.add(m.Run, events.RunRequested{Case: m.Case, CaseDigest: d("case:" + m.Case), Treatment: m.Treatment,
				TreatmentDigest: d("treatment:" + m.Treatment), Trial: m.Trial}, events.OwnerMeter)
			l.add(m.Run, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
			l.add(m.Run, events.RunEnded{Status: events.RunDone, Reason: "because"}, events.OwnerRunner)
			l.add(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: 1,
				Result: events.VerdictOK()}}, events.OwnerGrader)
		}
		facts := l.facts
		l.facts = nil
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		c := NewCounter("s")
		for _, f := range facts {
			if err := c.Apply(f, nil); err != nil { // no run is read back
				t.Fatal(err)
			}
		}
		facts = nil
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if c.InFlight() != 0 || !c.Complete() {
			t.Fatalf("%d trials: %d runs held, complete %v", trials, c.InFlight(), c.Complete())
		}
		runtime.KeepAlive(c)
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
	}
	small, large := held(250), held(2500)
	// 9,000 more attempts; 5 bytes each is 45 KB. Allow 64 bytes each.
	if grew := int64(large) - int64(small); grew > 9000*64 {
		t.Errorf("the counter of 10,000 settled attempts holds %d bytes more than that of 1,000: %d bytes an attempt", grew, grew/9000)
	}
}

// The counter's early-stopping decision is the log's: over a suite graded
// in random order, with a regrade and a dispute, both make the same
// decision after every fact.
func TestTheCountersStopDecisionIsTheLogs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	l := newSuite(t, submitted([]string{"c1", "c2", "c3"}, []string{"A", "B", "C"}, 8))
	type key struct {
		c, tr string
		trial uint32
	}
	var order []key
	for trial := uint32(1); trial <= 8; trial++ {
		for _, cs := range []string{"c1", "c2", "c3"} {
			for _, tr := range []string{"A", "B", "C"} {
				order = append(order, key{cs, tr, trial})
			}
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for i, k := range order {
		v := fail
		if k.tr == "B" && rng.IntN(20) > 0 || k.tr != "B" && rng.IntN(20) == 0 {
			v = pass
		}
		l.attempt(k.c, k.tr, k.trial, events.RunDone, u64(1), v)
		if i == 20 {
			first := order[0]
			l.regrade(first.c, first.tr, first.trial, 2, events.VerdictOK())
		}
		if i == 30 {
			first := order[1]
			l.regrade(first.c, first.tr, first.trial, 2, events.VerdictFail(), events.GradeConflict{Revision: 2, ConflictsWith: 1, Instrument: "tests", Reason: "r"})
		}
	}
	rule := Stopping{A: "A", B: "B", Confidence: 0.95, MinPairs: 4}
	c := NewCounter("s")
	lg := NewLog("s")
	reads, decided := 0, 0
	for i, f := range l.facts {
		if err := c.Apply(f, earlierIn(l.facts, i, &reads)); err != nil {
			t.Fatal(err)
		}
		lg.Apply(f)
		got, stopC := c.StopDecision(rule)
		want, stopL := StopDecision(lg, rule)
		if stopC != stopL || got != want {
			t.Fatalf("after fact %d: counter %v %+v, log %v %+v", i+1, stopC, got, stopL, want)
		}
		if stopC {
			decided++
		}
	}
	if decided == 0 {
		t.Fatal("the suite never stopped: the comparison decides nothing")
	}
}
