package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
)

// maxJUnitBytesARow bounds what a finished run that writes --junit holds
// a row of its report after writing it: the cases are written from the
// stored report's rows as they are read, each failure's veto fetched from
// the log. Rebuilding the report from the log to write them held every
// row, with its first veto (~600 bytes a row on this test's suite).
const maxJUnitBytesARow = 32

// A finished run writes --junit from the stored report without holding
// its rows: the file is WriteJUnit's of the report rebuilt from the log,
// byte for byte (each failure's message its counted grade's first veto,
// fetched from the log), and what the run holds after writing it is
// within maxJUnitBytesARow a row.
func TestARunWritesItsJUnitWithoutHoldingItsRows(t *testing.T) {
	// The server in a process of its own: its caches, which the veto
	// lookups fill and its timers empty, are not the run's heap.
	ctx, b := natsdBus(t, 4*time.Minute)
	const cases, trials = 10, 300
	const rows = cases * trials
	failing := []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed}}
	fillGraded(t, ctx, b, "s", cases, trials, false, func(m measure.Member) events.GraderVerdict {
		switch {
		case m.Trial%3 == 0:
			return events.GraderVerdict{Instruments: failing, Result: events.VerdictFail(), Vetoes: []events.GradeVeto{
				{Instrument: "tests", Requirement: "req-sum", Reason: "trial " + m.Run + ": 5 <not 4> & \"more\"", Binding: true},
				{Instrument: "lint", Requirement: "req-style", Reason: "long line"}}}
		case m.Trial%7 == 0:
			return events.GraderVerdict{Instruments: failing, Result: events.VerdictFail()}
		case m.Trial%11 == 0:
			return events.GraderVerdict{Result: events.VerdictNoAnswer("no <answer>")}
		}
		return events.GraderVerdict{Result: events.VerdictOK()}
	})
	r, want := rebuiltJUnit(ctx, t, b, "s")
	if !bytes.Contains(want.Bytes(), []byte(`failures="1280" errors="160"`)) || !bytes.Contains(want.Bytes(), []byte("vetoes req-sum: trial c-t-t3: 5 &lt;not 4&gt;")) {
		t.Fatalf("the suite's JUnit is not the one meant: %.600s", want.String())
	}
	info, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	storeReportThrough(ctx, t, b, r, info.CachedInfo().State.LastSeq)
	r = measure.Report{}

	write := func() (measure.Report, []byte) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "junit.xml")
		o := &runOptions{gates: gateFlags{junit: path}}
		got, err := o.writeOutputs(ctx, b, "s", io.Discard, func(string, ...any) {})
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return got, data
	}
	// Once first, so that what the bus keeps of its first reads is in the
	// base the heap is held to.
	write()
	base := liveHeapNow()
	got, junit := write()
	held := int64(liveHeapNow()) - int64(base) - int64(len(junit))
	runtime.KeepAlive(got)
	t.Logf("%d rows: held after writing --junit %d KiB, %d bytes a row", rows, held>>10, held/rows)

	if !bytes.Equal(junit, want.Bytes()) {
		t.Fatalf("--junit wrote %d bytes, not WriteJUnit's %d of the report rebuilt from the log:\n%.2000s", len(junit), want.Len(), junit)
	}
	if got.Treatments[0].Planned != rows {
		t.Fatalf("the report held: %+v", got.Treatments)
	}
	if held > maxJUnitBytesARow*rows {
		t.Errorf("the run holds %d bytes after writing --junit, %d a row, more than %d", held, held/rows, maxJUnitBytesARow)
	}
}

// 'factline run --junit' writes, from the stored report, the JUnit file
// of the report rebuilt from the log, byte for byte: its failures say the
// same first vetoes.
func TestRunJUnitIsTheRebuiltReportsJUnit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, junit := filepath.Join(dir, "store"), filepath.Join(dir, "junit.xml")
	code, out, errOut := runCLI(t, "run", nightly(t, dir, "off", true), "--store", store, "--fsync", "interval", "--junit", junit)
	if code != 0 {
		t.Fatalf("run exited %d: %s\n%s", code, errOut, out)
	}
	got, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, done := openStoreBus(ctx, t, store)
	defer done()
	if _, blob, err := storedReport(ctx, b, "nightly", nil, nil); err != nil || blob.digest == "" {
		t.Fatalf("the run's report is not the stored one (%v): the test writes nothing from it", err)
	}
	_, want := rebuiltJUnit(ctx, t, b, "nightly")
	if !bytes.Equal(got, want.Bytes()) || !bytes.Contains(got, []byte(`<failure message="tests vetoes tests: `)) {
		t.Fatalf("--junit wrote\n%s\nthe rebuilt report's JUnit is\n%s", got, want.String())
	}
}

// commitFailedRun commits, as the services do (with the run's links),
// the facts of a run that ended and was graded failed with one veto a
// revision, each revision's reason given; it returns the sequence of
// each verdict.
func commitFailedRun(ctx context.Context, tb testing.TB, b *bus.Bus, suite, run string, reasons ...string) []uint64 {
	tb.Helper()
	d := events.DigestOf([]byte(run))
	bodies := []events.Body{
		events.RunRequested{Case: "c", CaseDigest: d, Treatment: "t", TreatmentDigest: d, Trial: 1},
		events.RunClaimed{Runner: "r", Lease: 1},
		events.CandidateSealed{SnapshotDigest: d, Files: 1},
		events.RunEnded{Status: events.RunDone, Reason: "done", Spent: events.Spent{Steps: 1, Millis: 1}},
	}
	for i, why := range reasons {
		bodies = append(bodies, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: run, SnapshotID: d, Revision: uint32(i + 1),
			Vetoes: []events.GradeVeto{{Instrument: "tests", Requirement: "req", Reason: why}}, Result: events.VerdictFail()}})
	}
	var seqs []uint64
	for _, body := range bodies {
		owner := events.OwnerRunner
		switch body.(type) {
		case events.RunRequested:
			owner = events.OwnerMeter
		case events.GradeVerdict:
			owner = events.OwnerGrader
		}
		recs, err := b.Commit(ctx, nil, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
			f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: log.NextPosition(),
				Producer: events.Producer{Service: owner, Instance: "test"}}, body)
			return []bus.Pending{{Fact: f}}, err
		})
		if err != nil {
			tb.Fatal(err)
		}
		if _, ok := body.(events.GradeVerdict); ok {
			seqs = append(seqs, recs[len(recs)-1].Seq)
		}
	}
	return seqs
}

// A failure's veto is the one of the grade the stored report counted:
// a revision committed after the report's through is not read.
func TestTheVetoLookedUpIsTheReportsGrades(t *testing.T) {
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seqs := commitFailedRun(ctx, t, b, "s", "r1", "the counted grade's", "a regrade after the report")
	row := &measure.AttemptRow{Run: "r1", Outcome: measure.OutcomeFailed}
	for through, want := range map[uint64]string{seqs[0]: "the counted grade's", seqs[1]: "a regrade after the report"} {
		v, err := firstVetoInLog(ctx, b, "s", through)(row)
		if err != nil || v == nil || v.Reason != want {
			t.Errorf("through %d: %+v (%v), want the veto %q", through, v, err, want)
		}
	}
}

// BenchmarkStoredJUnitVetoLookup is what --junit costs a failed attempt
// of a stored report: its run's facts read (a LoadRun, following the
// run's links) and its counted grade's first veto found, the server in a
// process of its own. Each op looks up one of 1,000 runs.
func BenchmarkStoredJUnitVetoLookup(bb *testing.B) {
	ctx, b := natsdBus(bb, 5*time.Minute)
	const runs = 1000
	var through uint64
	for i := range runs {
		through = commitFailedRun(ctx, bb, b, "s", "r"+strconv.Itoa(i), "why")[0]
	}
	lookup := firstVetoInLog(ctx, b, "s", through)
	for i := 0; bb.Loop(); i++ {
		if v, err := lookup(&measure.AttemptRow{Run: "r" + strconv.Itoa(i%runs), Outcome: measure.OutcomeFailed}); err != nil || v == nil {
			bb.Fatalf("run %d: %+v, %v", i%runs, v, err)
		}
	}
}

// natsdBus starts a NATS server in a process of its own (startNatsd) and
// dials it, for at most timeout: what the caller measures, heap or time,
// is then its own, not the server's.
func natsdBus(tb testing.TB, timeout time.Duration) (context.Context, *bus.Bus) {
	tb.Helper()
	url := startNatsd(tb)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	tb.Cleanup(cancel)
	b, err := bus.Dial(ctx, url, bus.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	return ctx, b
}

// rebuiltJUnit returns the suite's report rebuilt from the log and its
// JUnit file, WriteJUnit's.
func rebuiltJUnit(ctx context.Context, t *testing.T, b *bus.Bus, suite string) (measure.Report, *bytes.Buffer) {
	t.Helper()
	r, err := meter.Report(ctx, b, suite)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := measure.WriteJUnit(&want, r); err != nil {
		t.Fatal(err)
	}
	return r, &want
}
