package meter_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

// runMeterAs runs a meter instance named instance until the returned stop
// is called (or the test ends); stop waits for it to have stopped.
func runMeterAs(t *testing.T, ctx context.Context, b *bus.Bus, instance string, opts ...kit.Option) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	m := kittest.Must(meter.New(b, append([]kit.Option{kit.WithInstance(instance)}, opts...)...))
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// suiteFacts reads suite m's facts in log order.
func suiteFacts(t *testing.T, ctx context.Context, b *bus.Bus) []events.Fact {
	t.Helper()
	var out []events.Fact
	_, err := b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter("m")}, func(r bus.Raw) error {
		f, err := r.Fact()
		if err != nil {
			return err
		}
		out = append(out, f)
		return nil
	})
	must(t, err)
	return out
}

// endRequested plays the runners: it claims and ends every requested run
// of suite m not ended yet, and grades it, until want runs have ended.
func endRequested(t *testing.T, ctx context.Context, b *bus.Bus, want int) {
	t.Helper()
	commit := func(run string, body events.Body) {
		t.Helper()
		_, err := b.Commit(ctx, nil, "m", run, func(log bus.RunLog) ([]bus.Pending, error) {
			f, err := events.NewFact(events.Meta{Suite: "m", Run: run, TaskGeneration: 1, Position: log.NextPosition(),
				Producer: events.Producer{Service: body.Kind().Owner(), Instance: "test"}}, body)
			return []bus.Pending{{Fact: f, MsgID: events.MessageID(run, body.Kind())}}, err
		})
		must(t, err)
	}
	ended := 0
	testutil.Until(ctx, t, fmt.Sprintf("%d runs ended", want), func() bool {
		open := map[string]bool{}
		var order []string
		for _, f := range suiteFacts(t, ctx, b) {
			switch f.Body.(type) {
			case events.RunRequested:
				open[f.Run] = true
				order = append(order, f.Run)
			case events.RunEnded:
				delete(open, f.Run)
			}
		}
		for _, run := range order {
			if !open[run] || ended == want {
				continue
			}
			snap := events.DigestOf([]byte(run))
			commit(run, events.RunClaimed{Runner: "r", Lease: 1})
			commit(run, events.CandidateSealed{SnapshotDigest: snap})
			commit(run, events.RunEnded{Status: events.RunDone, Reason: "r", Spent: events.Spent{Millis: 10}})
			commit(run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: run, SnapshotID: snap, Revision: 1,
				Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
				Result:      events.VerdictOK()}})
			ended++
		}
		return ended == want
	})
}

// checkWindow asserts that, at every point of suite m's log, at most
// window runs are requested and not ended, and that each planned run is
// requested exactly once; it returns who requested each run.
func checkWindow(t *testing.T, facts []events.Fact, window int, roster []measure.Member) map[string]string {
	t.Helper()
	by := map[string]string{}
	requested, ended := 0, 0
	for _, f := range facts {
		switch f.Body.(type) {
		case events.RunRequested:
			if who, twice := by[f.Run]; twice {
				t.Errorf("%s requested twice: by %s and by %s", f.Run, who, f.Producer.Instance)
			}
			by[f.Run] = f.Producer.Instance
			requested++
		case events.RunEnded:
			ended++
		}
		if requested-ended > window {
			t.Fatalf("%d runs requested and %d ended after fact %s (%s of %s): %d in flight, over the window of %d",
				requested, ended, f.ID, f.Kind(), f.Run, requested-ended, window)
		}
	}
	for _, m := range roster {
		if by[m.Run] == "" {
			t.Errorf("%s was never requested", m.Run)
		}
	}
	return by
}

// A suite is requested a window at a time: however many runs it plans,
// at no point does its log hold more than the window's runs requested
// and not ended, and each planned run is requested once.
func TestTheMeterRequestsAWindowAtATime(t *testing.T) {
	b, ctx := start(t)
	p := publish(t, ctx, b)
	must(t, suites.Submit(ctx, b, p, "test"))
	runMeterAs(t, ctx, b, "m-1", meter.WithRequestWindow(3))
	roster := measure.Roster(p.Submitted)
	endRequested(t, ctx, b, len(roster))
	checkWindow(t, suiteFacts(t, ctx, b), 3, roster)
}

// A meter that stops mid-suite, and another that died between two
// requests of one window, leave the suite to the next meter, which
// requests exactly the runs not requested yet, each once, and reports
// what a suite run without a stop reports.
func TestARestartedMeterRequestsEachRemainingRunOnce(t *testing.T) {
	b, ctx := start(t)
	p := publish(t, ctx, b)
	must(t, suites.Submit(ctx, b, p, "test"))
	roster := measure.Roster(p.Submitted)
	stop := runMeterAs(t, ctx, b, "m-1", meter.WithRequestWindow(3))
	endRequested(t, ctx, b, 2)
	testutil.Until(ctx, t, "the window refilled", func() bool {
		n := 0
		for _, f := range suiteFacts(t, ctx, b) {
			if _, ok := f.Body.(events.RunRequested); ok {
				n++
			}
		}
		return n == 5
	})
	stop()
	// A run ends with no meter running; a meter that died as it
	// requested the window this opened committed the first request of it
	// and no more: what roster[5] would carry (the trial after
	// roster[1]'s, same case and treatment).
	endRequested(t, ctx, b, 1)
	var first events.RunRequested
	for _, f := range suiteFacts(t, ctx, b) {
		if rq, ok := f.Body.(events.RunRequested); ok && f.Run == roster[1].Run {
			first = rq
		}
	}
	next := roster[5]
	first.Trial = next.Trial
	_, err := b.Commit(ctx, nil, "m", next.Run, func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: "m", Run: next.Run, TaskGeneration: 1, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerMeter, Instance: "m-dead"}}, first)
		return []bus.Pending{{Fact: f, MsgID: measure.RequestMsgID(next.Run)}}, err
	})
	must(t, err)

	runMeterAs(t, ctx, b, "m-2", meter.WithRequestWindow(3))
	endRequested(t, ctx, b, len(roster)-3)
	testutil.Until(ctx, t, "suite.reported", func() bool {
		for _, f := range suiteFacts(t, ctx, b) {
			if _, ok := f.Body.(events.SuiteReported); ok {
				return true
			}
		}
		return false
	})
	by := checkWindow(t, suiteFacts(t, ctx, b), 3, roster)
	for i, m := range roster {
		want := "m-2"
		switch {
		case i < 5:
			want = "m-1"
		case i == 5:
			want = "m-dead"
		}
		if by[m.Run] != want {
			t.Errorf("%s (attempt %d) requested by %q, want %q", m.Run, i, by[m.Run], want)
		}
	}
	got, err := meter.Report(ctx, b, "m")
	must(t, err)

	// The same suite, the same runs, one meter throughout.
	b2, ctx2 := start(t)
	p2 := publish(t, ctx2, b2)
	must(t, suites.Submit(ctx2, b2, p2, "test"))
	runMeterAs(t, ctx2, b2, "m-1", meter.WithRequestWindow(3))
	endRequested(t, ctx2, b2, len(roster))
	want, err := meter.Report(ctx2, b2, "m")
	must(t, err)
	g, _ := measure.EncodeJSON(got)
	w, _ := measure.EncodeJSON(want)
	if string(g) != string(w) {
		t.Fatalf("the report of the restarted suite differs from the uninterrupted one's:\n%s\n%s", g, w)
	}
}

// The meter counts a suite whose facts it is delivered one by one without
// making a consumer for each: a consumer's creation makes the server
// count what its filter has pending, which costs as many subjects as the
// stream's newest block holds, for every run.ended and grade.verdict of a
// long suite. Sixteen deliveries here, each handled before the next is
// committed, make no consumer.
func TestTheMeterMakesNoConsumerPerDelivery(t *testing.T) {
	_, _, creates := meterOneByOne(t)
	// The meter's durable consumer, and no more.
	if len(creates) > 1 {
		t.Fatalf("%d consumers made for 17 deliveries: %v", len(creates), creates)
	}
}

// The meter builds a suite's report from the fold of the facts it counted
// as they came, not by reading the whole suite back once it is complete:
// that second read decoded every fact of the suite again, the peak of a
// large suite's memory (docs/benchmarks.md). The suite here makes no
// consumer but the meter's own, and the report it stores is the bytes a
// rebuild from the log gives.
func TestTheMeterReportsWithoutReadingTheSuiteAgain(t *testing.T) {
	b, ctx, creates := meterOneByOne(t)
	if len(creates) != 1 {
		t.Fatalf("%d consumers made, want the meter's durable one alone (a read of the suite makes one more): %v", len(creates), creates)
	}
	log, err := b.LoadRun(ctx, "m", events.SuiteScope)
	must(t, err)
	var stored []byte
	for _, r := range log.Records {
		if sr, ok := r.Fact.Body.(events.SuiteReported); ok {
			stored, err = b.Blobs().Get(ctx, sr.ReportDigest)
			must(t, err)
		}
	}
	rebuilt, err := meter.Report(ctx, b, "m")
	must(t, err)
	want, err := measure.EncodeJSON(rebuilt)
	must(t, err)
	if string(stored) != string(want) {
		t.Fatalf("the stored report differs from the rebuilt one:\n%s\n%s", stored, want)
	}
}

// meterOneByOne runs a meter on suite m and plays its runners, each fact
// committed once the meter has handled the one before, until the suite
// is reported. It returns the consumers made on the FACTS stream meanwhile
// (their API subjects).
func meterOneByOne(t *testing.T) (*bus.Bus, context.Context, []string) {
	t.Helper()
	b, ctx := start(t)
	p := publish(t, ctx, b)
	roster := measure.Roster(p.Submitted)
	var mu sync.Mutex
	var creates []string
	for _, api := range []string{"$JS.API.CONSUMER.CREATE.FACTS.>", "$JS.API.CONSUMER.CREATE.FACTS", "$JS.API.CONSUMER.DURABLE.CREATE.FACTS.>"} {
		sub, err := b.Conn().Subscribe(api, func(m *nats.Msg) {
			mu.Lock()
			defer mu.Unlock()
			creates = append(creates, m.Subject)
		})
		must(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	must(t, b.Conn().Flush())
	must(t, suites.Submit(ctx, b, p, "test"))
	runMeterAs(t, ctx, b, "m-1")
	// Every fact the meter is delivered handled: nothing pending, nothing
	// awaiting its ack (asked with the consumer's info, which makes none).
	handled := func() bool {
		c, err := b.JetStream().Consumer(ctx, "FACTS", meter.ConsumerName)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}
	for _, m := range roster {
		testutil.Until(ctx, t, m.Run+" requested", func() bool {
			log, err := b.LoadRun(ctx, "m", m.Run)
			return err == nil && len(log.Records) > 0
		})
		snap := events.DigestOf([]byte(m.Run))
		for _, body := range []events.Body{events.RunClaimed{Runner: "r", Lease: 1}, events.CandidateSealed{SnapshotDigest: snap},
			events.RunEnded{Status: events.RunDone, Reason: "r", Spent: events.Spent{Millis: 10}},
			events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: snap, Revision: 1,
				Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
				Result:      events.VerdictOK()}}} {
			_, err := b.Commit(ctx, nil, "m", m.Run, func(log bus.RunLog) ([]bus.Pending, error) {
				f, err := events.NewFact(events.Meta{Suite: "m", Run: m.Run, TaskGeneration: 1, Position: log.NextPosition(),
					Producer: events.Producer{Service: body.Kind().Owner(), Instance: "test"}}, body)
				return []bus.Pending{{Fact: f}}, err
			})
			must(t, err)
			testutil.Until(ctx, t, "the meter handled "+string(body.Kind()), handled)
		}
	}
	testutil.Until(ctx, t, "suite.reported", func() bool {
		log, err := b.LoadRun(ctx, "m", events.SuiteScope)
		must(t, err)
		for _, r := range log.Records {
			if _, ok := r.Fact.Body.(events.SuiteReported); ok {
				return true
			}
		}
		return false
	})
	testutil.Until(ctx, t, "the meter handled suite.reported's", handled)
	mu.Lock()
	defer mu.Unlock()
	return b, ctx, slices.Clone(creates)
}
