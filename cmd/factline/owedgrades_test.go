package main

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// fillSettled writes a suite of runs each requested, claimed, ended,
// sealed and graded, and, when owed is set, one run more sealed and never
// graded, then the meter's suite.reported through them. It returns the
// runs planned.
func fillSettled(t *testing.T, ctx context.Context, b *bus.Bus, suite string, trials int, owed bool) int {
	t.Helper()
	js, err := jetstream.New(b.Conn(), jetstream.WithPublishAsyncMaxPending(2000))
	if err != nil {
		t.Fatal(err)
	}
	publish := func(run string, pos uint64, owner events.Owner, body events.Body) {
		gen := uint32(1)
		if run == events.SuiteScope {
			gen = 0
		}
		f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: gen, Position: pos,
			Producer: events.Producer{Service: owner, Instance: "fill"}}, body)
		if err != nil {
			t.Fatal(err)
		}
		data, err := events.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		subj, _ := f.Subject()
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: subj, Data: data}, jetstream.WithMsgID(f.ID.String())); err != nil {
			t.Fatal(err)
		}
	}
	d := events.DigestOf([]byte("fill"))
	sub := events.SuiteSubmitted{Name: suite, SpecDigest: d, Trials: uint32(trials),
		Cases: []events.Ref{{ID: "c", Digest: d}}, Treatments: []events.Ref{{ID: "t", Digest: d}}}
	publish(events.SuiteScope, 1, events.OwnerSubmitter, sub)
	for m := range measure.Members(sub) {
		snap := events.DigestOf([]byte(m.Run))
		publish(m.Run, 1, events.OwnerMeter, events.RunRequested{Case: m.Case, CaseDigest: d, Treatment: m.Treatment, TreatmentDigest: d, Trial: m.Trial})
		publish(m.Run, 2, events.OwnerRunner, events.RunClaimed{Runner: "fill", Lease: 1})
		publish(m.Run, 3, events.OwnerRunner, events.CandidateSealed{SnapshotDigest: snap, Files: 1})
		publish(m.Run, 4, events.OwnerRunner, events.RunEnded{Status: events.RunDone, Reason: "done", Spent: events.Spent{Steps: 1, Millis: 1}})
		publish(m.Run, 5, events.OwnerGrader, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: snap,
			Revision: 1, Result: events.VerdictOK()}})
	}
	if owed {
		// A run the roster does not plan (an earlier run a retry
		// replaced, say): sealed, never graded, in no report.
		publish("owed-1", 1, events.OwnerRunner, events.CandidateSealed{SnapshotDigest: events.DigestOf([]byte("owed")), Files: 1})
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatalf("fill: %v", ctx.Err())
	}
	info, err := js.Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	publish(events.SuiteScope, 2, events.OwnerMeter, events.SuiteReported{ReportDigest: d, Attempts: uint32(trials),
		Passed: uint32(trials), Through: info.CachedInfo().State.LastSeq})
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatalf("fill: %v", ctx.Err())
	}
	return trials
}

// endHeap follows a suite of the given runs to its report as 'factline
// run' does, restarts the server (which then holds none of its blocks'
// subject state, as after two minutes unread), waits for the owed grades,
// and returns how much the live heap of the process (the embedded
// server's with the rest) grew in that wait.
func endHeap(t *testing.T, trials int) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := bustest.StartRestartable(t)
	b, err := bus.Dial(ctx, "nats://"+srv.Config.Listen, bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Conn().Close()
	planned := fillSettled(t, ctx, b, "end", trials, false)
	p := newProgress(io.Discard, io.Discard)
	if err := p.follow(ctx, b, "end", planned, idleWatch{}); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	for !b.Conn().IsConnected() {
		if ctx.Err() != nil {
			t.Fatal("no connection after the restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	if err := awaitOwedGrades(ctx, b, "end", p, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc) - int64(before)
}

// A local run's end waits for the grades its report does not wait for
// from where following the suite left off: it reads the suite no more.
// It read every sealed candidate and verdict of the suite again, a
// filtered read from the stream's start, which made the server load the
// subject state of every block of the stream (kept two minutes, ~1-2 KB a
// run) when the process peaked: the live heap of the wait grew with the
// suite.
func TestTheEndWaitsForOwedGradesFromWhereItFollowed(t *testing.T) {
	const n = 2000
	small, large := endHeap(t, n), endHeap(t, 4*n)
	t.Logf("the wait for owed grades grew the live heap by %d KiB after %d runs, %d KiB after %d", small>>10, n, large>>10, 4*n)
	// 6,000 runs more: at 100 bytes a run, 0.6 MB, room for the
	// collector's noise, a sixth of what the read of the suite held.
	if grew := large - small; grew > 100*3*n {
		t.Errorf("the wait for owed grades held %d bytes a run more at %d runs than at %d", grew/(3*n), 4*n, n)
	}
}

// The grades owed at the report, and those the wait then sees settle,
// are the ones the suite's facts say: a candidate sealed and never graded
// keeps the wait going until its verdict arrives.
func TestTheEndWaitsForAGradeOwedAtTheReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, _ := bustest.Start(t)
	planned := fillSettled(t, ctx, b, "owing", 20, true)
	p := newProgress(io.Discard, io.Discard)
	if err := p.follow(ctx, b, "owing", planned, idleWatch{}); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- awaitOwedGrades(ctx, b, "owing", p, t.TempDir()) }()
	select {
	case err := <-waited:
		t.Fatalf("the wait ended (%v) with owed-1's candidate ungraded", err)
	case <-time.After(500 * time.Millisecond):
	}
	snap := events.DigestOf([]byte("owed"))
	if _, err := b.Commit(ctx, nil, "owing", "owed-1", func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: "owing", Run: "owed-1", TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerGrader, Instance: "test"}},
			events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "owed-1", SnapshotID: snap, Revision: 1, Result: events.VerdictOK()}})
		return []bus.Pending{{Fact: f}}, err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the wait did not end once owed-1 was graded")
	}
}
