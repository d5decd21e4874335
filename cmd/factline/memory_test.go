package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/kit"
)

// writeTrialsSuite writes a suite of one case, answered done at once by a
// scripted model, under one treatment with the given trials.
func writeTrialsSuite(t *testing.T, trials int) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"suite.yaml": fmt.Sprintf("name: mem\ncases: [{path: c.yaml}]\ntreatments: [{path: t.yaml}]\ntrials: %d\n", trials),
		"c.yaml":     "id: c\ninstruction: Say you are done.\nbudget: {steps: 2}\n",
		"t.yaml":     "id: t\nmodel: {provider: scripted, scripts: s}\n",
		"s/c.yaml":   "turns:\n  - text: Done.\n    usage: {input_tokens: 10, output_tokens: 2, cost: 1}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

var progressLine = regexp.MustCompile(`runs: (\d+)/(\d+) started, (\d+) ended`)

// standIn stands in for the runners and the grader: it takes each
// run.requested from a durable consumer, as the runners do, and commits
// the run's claim, its sealed candidate, its end and its grade, eight runs
// at once at most. Once pauseAt runs are done it holds the rest until
// resume is closed.
type standIn struct {
	b       *bus.Bus
	suite   string
	pauseAt int64
	resume  chan struct{}
	done    atomic.Int64
}

func (s *standIn) run(ctx context.Context) error {
	commit := func(run string, owner events.Owner, key string, body events.Body) error {
		id := events.MessageID(run, events.Kind(key))
		_, err := s.b.Commit(ctx, nil, s.suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
			if _, ok := log.ByMsgID(id); ok {
				return nil, nil
			}
			f, err := events.NewFact(events.Meta{Suite: s.suite, Run: run, TaskGeneration: 1, Position: log.NextPosition(),
				Producer: events.Producer{Service: owner, Instance: "stand-in"}}, body)
			return []bus.Pending{{Fact: f, MsgID: id}}, err
		})
		return err
	}
	err := s.b.Consume(ctx, bus.ConsumerConfig{Name: "stand-in", Filters: []string{events.KindFilter(events.KindRunRequested)}, Workers: 8},
		func(ctx context.Context, d bus.Delivery) error {
			if s.done.Load() >= s.pauseAt {
				select {
				case <-s.resume:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			run := d.Fact.Run
			snap := events.DigestOf([]byte(run))
			if err := commit(run, events.OwnerRunner, "claimed", events.RunClaimed{Runner: "stand-in", Lease: 1}); err != nil {
				return err
			}
			if err := commit(run, events.OwnerRunner, "sealed", events.CandidateSealed{SnapshotDigest: snap}); err != nil {
				return err
			}
			if err := commit(run, events.OwnerRunner, "ended", events.RunEnded{Status: events.RunDone, Reason: "done",
				Spent: events.Spent{Steps: 1, Millis: 1}}); err != nil {
				return err
			}
			err := commit(run, events.OwnerGrader, "graded", events.GradeVerdict{Verdict: events.GraderVerdict{
				AttemptID: run, SnapshotID: snap, Revision: 1, Result: events.VerdictOK(),
				Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}}}})
			if err == nil {
				s.done.Add(1)
			}
			return err
		})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// heapHalfway runs a suite of the given trials through 'factline run
// --nats' against a meter in this process and a stand-in for the other
// services, the server in a process of its own, and returns the live heap
// (after a collection) once half of the runs are done: all of them requested, as many in flight whatever the suite's
// size. The suite then runs to its report.
func heapHalfway(t *testing.T, trials int) (live, allocated uint64) {
	url := startNatsd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, stopMeter := startMeter(ctx, t, url)
	defer stopMeter()
	si := &standIn{b: b, suite: "mem", pauseAt: int64(trials / 2), resume: make(chan struct{})}
	stopped := make(chan error, 1)
	go func() { stopped <- si.run(ctx) }()

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	out, errOut := &testutil.LogBuffer{}, &testutil.LogBuffer{}
	_, exited := startRun(t, out, errOut, writeTrialsSuite(t, trials), "--nats", url)
	deadline := time.After(2 * time.Minute)
	for si.done.Load() < si.pauseAt {
		select {
		case code := <-exited:
			t.Fatalf("run exited %d before half its runs were done: %s", code, errOut.String())
		case err := <-stopped:
			t.Fatalf("the stand-in services stopped: %v", err)
		case <-deadline:
			t.Fatalf("half the runs not done after 2 minutes: %q", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// What is held for good stays; what readers buffer while they catch
	// up drains once nothing new is committed: the smallest of a few
	// seconds' samples is the former (not a timing assertion: a reader
	// still behind only makes the heap smaller).
	var least uint64 = math.MaxUint64
	for range 15 {
		time.Sleep(200 * time.Millisecond)
		runtime.GC()
		runtime.ReadMemStats(&ms)
		least = min(least, ms.HeapAlloc)
	}
	close(si.resume)
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("run exited %d: %s", code, errOut.String())
		}
	case err := <-stopped:
		t.Fatalf("the stand-in services stopped: %v", err)
	case <-deadline:
		t.Fatalf("no report after 2 minutes: %q", out.String())
	}
	if m := progressLine.FindAllStringSubmatch(out.String(), -1); len(m) == 0 || m[len(m)-1][3] != strconv.Itoa(trials) {
		t.Fatalf("the suite was reported without its %d runs ended: %q", trials, out.String())
	}
	runtime.ReadMemStats(&ms)
	return least, ms.TotalAlloc - before
}

// 'factline run' and the meter hold what the runs in flight need, not
// what the suite submitted, and do as much for each run whatever the
// suite's size: a suite of four times the runs, run to the same point
// with as many in flight, leaves the live heap of the process that
// follows and measures it (the server apart) no larger beyond a small
// allowance, and costs no more allocation a run. They held every run's
// facts until the suite was reported, and the meter built the whole
// report again for every run that ended or was graded: memory and time a
// run grew with the suite (55 KB a run, and half the rate, in a
// 33,786-run suite).
func TestRunMemoryFollowsTheRunsInFlight(t *testing.T) {
	const n = 150
	small, allocSmall := heapHalfway(t, n)
	large, allocLarge := heapHalfway(t, 4*n)
	perSmall, perLarge := allocSmall/n, allocLarge/(4*n)
	t.Logf("live heap halfway: %d runs %.2f MiB, %d runs %.2f MiB; allocated a run: %d KiB, %d KiB",
		n, float64(small)/(1<<20), 4*n, float64(large)/(1<<20), perSmall>>10, perLarge>>10)
	// 450 more runs submitted, 225 more ended. The meter keeps a record
	// of every ended run for the report (~1.2-1.5 KB, measure's
	// TestLogHoldsLittleARun), so the heap does grow with the runs ended;
	// 8 KB a run ended (1.8 MB) leaves room for that record and the
	// collector's noise (0.6 MiB seen under load) and is still a seventh
	// of what holding each run's facts cost (55 KB a run).
	const perEnded = 8 << 10
	if grew := int64(large) - int64(small); grew > perEnded*(3*n/2) {
		t.Errorf("the live heap grew by %.2f MiB (%d bytes a run ended) from %d to %d runs", float64(grew)/(1<<20), grew/(3*n/2), n, 4*n)
	}
	if perLarge > perSmall*3/2 {
		t.Errorf("a run of a %d-run suite allocated %d KiB, of a %d-run suite %d KiB: work a run grows with the suite",
			4*n, perLarge>>10, n, perSmall>>10)
	}
}

// startMeter dials url and starts a meter on it, the one service the
// memory tests run in their own process; stop ends both, when the
// caller's measurement is done rather than when the test is (a second
// measurement in the same test must not share the heap with the first).
func startMeter(ctx context.Context, t *testing.T, url string) (b *bus.Bus, stop func()) {
	t.Helper()
	b, err := bus.Dial(ctx, url, bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Start(ctx, b, fleet.Options{Services: []string{fleet.Meter}, Shared: []kit.Option{kit.WithInstance("meter-test")}})
	if err != nil {
		b.Conn().Close()
		t.Fatal(err)
	}
	return b, func() { f.Stop(); b.Conn().Close() }
}
