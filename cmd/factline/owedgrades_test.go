package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	return fillGraded(t, ctx, b, suite, 1, trials, owed, func(measure.Member) events.GraderVerdict {
		return events.GraderVerdict{Result: events.VerdictOK()}
	})
}

// fillGraded is fillSettled with cases cases (one treatment), grading
// each run with what grade returns (its attempt, snapshot and revision
// are the fill's).
func fillGraded(t *testing.T, ctx context.Context, b *bus.Bus, suite string, cases, trials int, owed bool,
	grade func(measure.Member) events.GraderVerdict) int {
	t.Helper()
	js, err := jetstream.New(b.Conn(), jetstream.WithPublishAsyncMaxPending(2000))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	publish := func(run string, pos uint64, owner events.Owner, body events.Body) {
		if n++; n%1000 == 0 { // bounded in flight
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				t.Fatalf("fill: %v", ctx.Err())
			}
		}
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
	sub := events.SuiteSubmitted{Name: suite, SpecDigest: d, Trials: uint32(trials), Treatments: []events.Ref{{ID: "t", Digest: d}}}
	sub.Cases = append(sub.Cases, events.Ref{ID: "c", Digest: d})
	for i := 2; i <= cases; i++ {
		sub.Cases = append(sub.Cases, events.Ref{ID: "c" + strconv.Itoa(i), Digest: d})
	}
	planned := cases * trials
	publish(events.SuiteScope, 1, events.OwnerSubmitter, sub)
	for m := range measure.Members(sub) {
		snap := events.DigestOf([]byte(m.Run))
		publish(m.Run, 1, events.OwnerMeter, events.RunRequested{Case: m.Case, CaseDigest: d, Treatment: m.Treatment, TreatmentDigest: d, Trial: m.Trial})
		publish(m.Run, 2, events.OwnerRunner, events.RunClaimed{Runner: "fill", Lease: 1})
		publish(m.Run, 3, events.OwnerRunner, events.CandidateSealed{SnapshotDigest: snap, Files: 1})
		publish(m.Run, 4, events.OwnerRunner, events.RunEnded{Status: events.RunDone, Reason: "done", Spent: events.Spent{Steps: 1, Millis: 1}})
		v := grade(m)
		v.AttemptID, v.SnapshotID, v.Revision = m.Run, snap, 1
		publish(m.Run, 5, events.OwnerGrader, events.GradeVerdict{Verdict: v})
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
	publish(events.SuiteScope, 2, events.OwnerMeter, events.SuiteReported{ReportDigest: d, Attempts: uint32(planned),
		Passed: uint32(planned), Through: info.CachedInfo().State.LastSeq})
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatalf("fill: %v", ctx.Err())
	}
	return planned
}

// consumersMade records the consumers made on the FACTS stream from now
// on: the start of each (its deliver policy and start sequence).
func consumersMade(t *testing.T, b *bus.Bus) func() []string {
	t.Helper()
	var mu sync.Mutex
	var made []string
	for _, api := range []string{"$JS.API.CONSUMER.CREATE.FACTS.>", "$JS.API.CONSUMER.CREATE.FACTS"} {
		sub, err := b.Conn().Subscribe(api, func(m *nats.Msg) {
			var req struct {
				Config struct {
					DeliverPolicy string   `json:"deliver_policy"`
					OptStartSeq   uint64   `json:"opt_start_seq"`
					Filters       []string `json:"filter_subjects"`
					Filter        string   `json:"filter_subject"`
				} `json:"config"`
			}
			_ = json.Unmarshal(m.Data, &req)
			mu.Lock()
			defer mu.Unlock()
			made = append(made, fmt.Sprintf("%s %d %s%v", req.Config.DeliverPolicy, req.Config.OptStartSeq, req.Config.Filter, req.Config.Filters))
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := b.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(made)
	}
}

// A local run's end waits for the grades its report does not wait for
// from where following the suite left off: with none owed it reads the
// suite no more. It read every sealed candidate and verdict of the suite
// again, a filtered read from the stream's start, which made the server
// load the subject state of every block of the stream (kept two minutes,
// ~1-2 KB a run) when the process peaked (docs/benchmarks.md#suite-size).
func TestTheEndWaitsForOwedGradesFromWhereItFollowed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, _ := bustest.Start(t)
	planned := fillSettled(t, ctx, b, "end", 500, false)
	p := newProgress(io.Discard, io.Discard)
	if err := p.follow(ctx, b, "end", planned, idleWatch{}); err != nil {
		t.Fatal(err)
	}
	made := consumersMade(t, b)
	if err := awaitOwedGrades(ctx, b, "end", p, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if m := made(); len(m) > 0 {
		t.Errorf("with no grade owed, the end read the suite again: consumers %q", m)
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
	made := consumersMade(t, b)
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
	// What it read starts after the facts followed (the suite's last,
	// its suite.reported, is planned runs × 5 + 3).
	after := fmt.Sprintf("by_start_sequence %d ", planned*5+3+1)
	for _, m := range made() {
		if !strings.HasPrefix(m, after) {
			t.Errorf("the end read %q, not only what follows the report (%q)", m, after)
		}
	}
}
