package meter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/suites"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// publish writes a suite of two cases and two treatments, publishes it and
// returns what suite.submitted will carry.
func publish(t *testing.T, ctx context.Context, b *bus.Bus) *suites.Published {
	t.Helper()
	return publishTrials(t, ctx, b, 2)
}

// publishTrials is publish with the given trials: 4 × trials runs.
func publishTrials(t testing.TB, ctx context.Context, b *bus.Bus, trials int) *suites.Published {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"suite.yaml": fmt.Sprintf("name: m\ncases: [{path: a.yaml}, {path: b.yaml}]\ntreatments: [{path: t1.yaml}, {path: t2.yaml}]\ntrials: %d\n", trials),
		"a.yaml":     "id: a\ninstruction: x\ngrading:\n  instruments: [{id: tests, kind: command, command: 'true'}]\n",
		"b.yaml":     "id: b\ninstruction: y\nbudget: {steps: 3, cost: 9}\ngrading:\n  instruments: [{id: tests, kind: command, command: 'true'}]\n",
		"t1.yaml":    "id: t1\nmodel: {provider: openai, name: m1}\n",
		"t2.yaml":    "id: t2\nmodel: {provider: openai, name: m1}\ncontext: {mode: window}\nstall: {idle_turns: 0}\n",
	}
	for name, content := range files {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	s, err := suites.Load(filepath.Join(dir, "suite.yaml"))
	must(t, err)
	p, err := suites.Publish(ctx, b.Blobs(), s)
	must(t, err)
	return p
}

func start(t *testing.T) (*bus.Bus, context.Context) {
	t.Helper()
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return b, ctx
}

func runMeter(t *testing.T, ctx context.Context, b *bus.Bus) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = kittest.Must(meter.New(b, kit.WithInstance("m-test"))).Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// requested returns the run.requested facts of every planned run.
func requested(t *testing.T, ctx context.Context, b *bus.Bus, p *suites.Published) map[string]bus.RunLog {
	t.Helper()
	out := map[string]bus.RunLog{}
	for _, m := range measure.Roster(p.Submitted) {
		log, err := b.LoadRun(ctx, "m", m.Run)
		must(t, err)
		out[m.Run] = log
	}
	return out
}

// suite.submitted expands into run.requested facts with deterministic run
// and message IDs, once, each with the attempt's agent identity.
func TestSubmittedSuiteExpandsOnce(t *testing.T) {
	b, ctx := start(t)
	p := publish(t, ctx, b)
	must(t, suites.Submit(ctx, b, p, "test"))
	runMeter(t, ctx, b)
	roster := measure.Roster(p.Submitted)
	if len(roster) != 2*2*2 {
		t.Fatalf("roster of %d", len(roster))
	}
	testutil.Until(ctx, t, "every run requested", func() bool {
		for _, log := range requested(t, ctx, b, p) {
			if len(log.Records) == 0 {
				return false
			}
		}
		return true
	})
	// Expanding again (a redelivered submission) requests nothing twice.
	sub, err := b.LoadRun(ctx, "m", events.SuiteScope)
	must(t, err)
	must(t, kittest.Must(meter.New(b)).Expand(ctx, sub.Records[0].Fact, p.Submitted))
	for _, m := range roster {
		log := requested(t, ctx, b, p)[m.Run]
		if len(log.Records) != 1 || !log.Records[0].HasMsgID(measure.RequestMsgID(m.Run)) {
			t.Fatalf("%s: %d facts", m.Run, len(log.Records))
		}
		rr := log.Records[0].Fact.Body.(events.RunRequested)
		if rr.Case != m.Case || rr.Treatment != m.Treatment || rr.Trial != m.Trial || rr.Identity == "" || len(rr.Components) != 5 {
			t.Fatalf("%s: %+v", m.Run, rr)
		}
		if m.Case == "b" && (rr.Budget.Steps != 3 || rr.Budget.Cost != 9) {
			t.Fatalf("budget %+v", rr.Budget)
		}
	}
	// The two treatments differ in context and stall: their identities say
	// so.
	logs := requested(t, ctx, b, p)
	a1 := logs["a-t1-t1"].Records[0].Fact.Body.(events.RunRequested)
	a2 := logs["a-t2-t1"].Records[0].Fact.Body.(events.RunRequested)
	if d := measure.DiffComponents(a1.Components, a2.Components); len(d) != 2 || d[0] != "context" || d[1] != "stall" {
		t.Fatalf("differences %v", d)
	}
	if again := logs["a-t1-t2"].Records[0].Fact.Body.(events.RunRequested); again.Identity != a1.Identity {
		t.Fatal("two trials of one case under one treatment are different agents")
	}
}

// When every attempt is settled the meter stores the report and appends
// suite.reported, whose counts add up and whose blob is the report anyone
// rebuilds from the log.
func TestReportedWhenEveryAttemptIsSettled(t *testing.T) {
	b, ctx := start(t)
	p := publish(t, ctx, b)
	must(t, suites.Submit(ctx, b, p, "test"))
	runMeter(t, ctx, b)
	roster := measure.Roster(p.Submitted)
	testutil.Until(ctx, t, "every run requested", func() bool {
		for _, log := range requested(t, ctx, b, p) {
			if len(log.Records) == 0 {
				return false
			}
		}
		return true
	})
	commit := func(run string, body events.Body) {
		t.Helper()
		_, err := b.Commit(ctx, nil, "m", run, func(log bus.RunLog) ([]bus.Pending, error) {
			f, err := events.NewFact(events.Meta{Suite: "m", Run: run, TaskGeneration: 1, Position: log.NextPosition(),
				Producer: events.Producer{Service: body.Kind().Owner(), Instance: "test"}}, body)
			return []bus.Pending{{Fact: f}}, err
		})
		must(t, err)
	}
	results := []events.VerdictResult{events.VerdictOK(), events.VerdictFail(), events.VerdictWaiting("tests"), events.VerdictNoAnswer("no candidate")}
	for i, m := range roster {
		snap := events.DigestOf([]byte(m.Run))
		commit(m.Run, events.RunClaimed{Runner: "r", Lease: 1})
		commit(m.Run, events.CandidateSealed{SnapshotDigest: snap})
		status := events.RunDone
		if i == len(roster)-1 {
			status = events.RunCancelled // excluded: the meter does not wait for its grade
		}
		commit(m.Run, events.RunEnded{Status: status, Reason: "r", Spent: events.Spent{Millis: 10}})
		if status == events.RunCancelled {
			continue
		}
		commit(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: snap, Revision: 1,
			Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
			Result:      results[i%len(results)]}})
	}
	var reported events.SuiteReported
	testutil.Until(ctx, t, "suite.reported", func() bool {
		log, err := b.LoadRun(ctx, "m", events.SuiteScope)
		must(t, err)
		for _, r := range log.Records {
			if sr, ok := r.Fact.Body.(events.SuiteReported); ok {
				reported = sr
				return true
			}
		}
		return false
	})
	// The cancelled run's end is the suite's last fact: the report folded
	// the suite through it.
	lastRun, err := b.LoadRun(ctx, "m", roster[len(roster)-1].Run)
	must(t, err)
	want := events.SuiteReported{ReportDigest: reported.ReportDigest, Attempts: 8, Passed: 2, Failed: 2, Pending: 2, Invalid: 1, Excluded: 1,
		Through: lastRun.Records[len(lastRun.Records)-1].Seq}
	if reported != want {
		t.Fatalf("reported %+v, want %+v", reported, want)
	}
	data, err := b.Blobs().Get(ctx, reported.ReportDigest)
	must(t, err)
	var stored measure.Report
	must(t, json.Unmarshal(data, &stored))
	rebuilt, err := meter.Report(ctx, b, "m")
	must(t, err)
	again, _ := measure.EncodeJSON(rebuilt)
	if string(again) != string(data) {
		t.Fatal("the stored report differs from the one rebuilt from the log")
	}
	if !stored.Complete || stored.Treatments[0].Pending+stored.Treatments[1].Pending != 2 {
		t.Fatalf("stored report %+v", stored.Treatments)
	}
	// Nothing new: no second suite.reported.
	must(t, kittest.Must(meter.New(b)).Handle(ctx, bus.Delivery{Record: bus.Record{Fact: mustFact(t, "m")}}))
	log, _ := b.LoadRun(ctx, "m", events.SuiteScope)
	n := 0
	for _, r := range log.Records {
		if _, ok := r.Fact.Body.(events.SuiteReported); ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d suite.reported facts", n)
	}
	// A regrade after the report (the meter has dropped the reported
	// suite's state): the suite is folded again and reported anew.
	first := roster[1] // failed at revision 1
	commit(first.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: first.Run, SnapshotID: events.DigestOf([]byte(first.Run)), Revision: 2,
		Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "2", Required: true, Outcome: events.InstrumentPassed}},
		Result:      events.VerdictOK()}})
	testutil.Until(ctx, t, "a second suite.reported", func() bool {
		log, err := b.LoadRun(ctx, "m", events.SuiteScope)
		must(t, err)
		var last events.SuiteReported
		n := 0
		for _, r := range log.Records {
			if sr, ok := r.Fact.Body.(events.SuiteReported); ok {
				last, n = sr, n+1
			}
		}
		return n == 2 && last.Passed == 3 && last.Failed == 1
	})
}

// mustFact returns a run.ended of the suite, to hand the meter a delivery.
func mustFact(t *testing.T, suite string) events.Fact {
	f, err := events.NewFact(events.Meta{Suite: suite, Run: "a-t1-t1", TaskGeneration: 1, Position: 1,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "x"}}, events.RunEnded{Status: events.RunDone, Reason: "r"})
	must(t, err)
	return f
}

// A runner may publish on its runs' run.ended subjects, and nothing but
// the subject check stops it putting a passing grade.verdict there. The
// meter's consumer dead-letters it; the meter's report, its rebuild and a
// later settle of the suite (a redelivered run.ended to a fresh meter)
// leave it out, so no second suite.reported carries it, and the rebuild
// names the message it left out.
func TestForgedVerdictChangesNoReport(t *testing.T) {
	b, ctx := start(t)
	p := publish(t, ctx, b)
	must(t, suites.Submit(ctx, b, p, "test"))
	runMeter(t, ctx, b)
	roster := measure.Roster(p.Submitted)
	testutil.Until(ctx, t, "every run requested", func() bool {
		for _, log := range requested(t, ctx, b, p) {
			if len(log.Records) == 0 {
				return false
			}
		}
		return true
	})
	commit := func(run string, body events.Body) bus.Record {
		t.Helper()
		recs, err := b.Commit(ctx, nil, "m", run, func(log bus.RunLog) ([]bus.Pending, error) {
			f, err := events.NewFact(events.Meta{Suite: "m", Run: run, TaskGeneration: 1, Position: log.NextPosition(),
				Producer: events.Producer{Service: body.Kind().Owner(), Instance: "test"}}, body)
			return []bus.Pending{{Fact: f}}, err
		})
		must(t, err)
		return recs[0]
	}
	verdict := func(run string, rev uint32, result events.VerdictResult) events.GradeVerdict {
		return events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: run, SnapshotID: events.DigestOf([]byte(run)), Revision: rev,
			Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed}},
			Result:      result}}
	}
	var ended bus.Record
	for _, m := range roster {
		commit(m.Run, events.RunClaimed{Runner: "r", Lease: 1})
		commit(m.Run, events.CandidateSealed{SnapshotDigest: events.DigestOf([]byte(m.Run))})
		ended = commit(m.Run, events.RunEnded{Status: events.RunDone, Reason: "r", Spent: events.Spent{Millis: 10}})
		commit(m.Run, verdict(m.Run, 1, events.VerdictFail()))
	}
	reports := func() []events.SuiteReported {
		log, err := b.LoadRun(ctx, "m", events.SuiteScope)
		must(t, err)
		var out []events.SuiteReported
		for _, r := range log.Records {
			if sr, ok := r.Fact.Body.(events.SuiteReported); ok {
				out = append(out, sr)
			}
		}
		return out
	}
	testutil.Until(ctx, t, "suite.reported", func() bool { return len(reports()) == 1 })
	first := reports()[0]
	if first.Passed != 0 || first.Failed != 8 {
		t.Fatalf("reported %+v", first)
	}

	// The forgery: a grader-made verdict, passed at a newer revision, on
	// the subject of the run's end.
	run := roster[0].Run
	log, err := b.LoadRun(ctx, "m", run)
	must(t, err)
	forged, err := events.NewFact(events.Meta{Suite: "m", Run: run, TaskGeneration: 1, Position: log.NextPosition(),
		Producer: events.Producer{Service: events.OwnerGrader, Instance: "grader-1"}}, verdict(run, 2, events.VerdictOK()))
	must(t, err)
	data, err := events.Encode(forged)
	must(t, err)
	ack, err := b.JetStream().Publish(ctx, "fact.m."+run+".run.ended", data)
	must(t, err)
	testutil.Until(ctx, t, "the meter's dead letter", func() bool {
		dl, err := b.DeadLetters(ctx, meter.ConsumerName)
		return err == nil && len(dl) == 1 && dl[0].StreamSeq == ack.Sequence && strings.Contains(dl[0].Reason, "does not match its subject")
	})

	// A redelivery makes a fresh meter fold the whole suite again.
	must(t, kittest.Must(meter.New(b)).Handle(ctx, bus.Delivery{Record: ended}))
	if got := reports(); len(got) != 1 {
		t.Fatalf("%d suite.reported facts after the forgery; the last: %+v", len(got), got[len(got)-1])
	}
	r, skipped, err := meter.ReportWithSkipped(ctx, b, "m")
	must(t, err)
	data, err = b.Blobs().Get(ctx, first.ReportDigest)
	must(t, err)
	if again, _ := measure.EncodeJSON(r); string(again) != string(data) {
		t.Fatal("the rebuilt report differs from the one reported before the forgery")
	}
	if len(skipped) != 1 || skipped[0].Seq != ack.Sequence || !errors.Is(skipped[0].Err, events.ErrSubjectMismatch) {
		t.Fatalf("skipped %+v", skipped)
	}
	if plain, err := meter.Report(ctx, b, "m"); err != nil || plain.Treatments[0].Passed != 0 {
		t.Fatalf("report: %+v, %v", plain.Treatments, err)
	}
}

// A suite.submitted whose roster passes suites.MaxRuns (from a submitter
// that does not check, or an older one) is refused as a permanent error
// before a single run is requested: the meter never builds a roster it
// cannot afford.
func TestOversizedRosterIsRefused(t *testing.T) {
	b, ctx := start(t)
	p := publish(t, ctx, b)
	sub := p.Submitted
	sub.Trials = suites.MaxRuns/4 + 1 // 2 cases × 2 treatments
	f, err := events.NewFact(events.Meta{Suite: "m", Run: events.SuiteScope, Position: 1,
		Producer: events.Producer{Service: events.OwnerSubmitter, Instance: "test"}}, sub)
	must(t, err)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = kittest.Must(meter.New(b)).Expand(ctx, f, sub)
	if err == nil || bus.Transient(err) || !strings.Contains(err.Error(), fmt.Sprintf("%d runs; a suite has at most %d", 4*sub.Trials, suites.MaxRuns)) {
		t.Fatalf("expanding %d runs: %v", 4*sub.Trials, err)
	}
	if log, err := b.LoadRun(ctx, "m", "a-t1-t1"); err != nil || len(log.Records) != 0 {
		t.Fatalf("a run was requested: %v %v", log.Records, err)
	}
}
