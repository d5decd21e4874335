package integration

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/services/runner"
)

// Issue 16, item 3, under ops/nats/roles.conf: the runner identity may
// publish on its runs' run.ended subjects, and it puts a passing
// grade.verdict (producer grader) there. The server stores it. Nothing it
// does changes a report: the grader's and the meter's consumers
// dead-letter it; a later settle of the suite (a fresh meter handed a
// redelivered run.ended) writes no second suite.reported; factline report
// prints the report of before and names the message it left out;
// factline audit fails naming it under the rule fact-subject; tail flags
// its line.
func TestForgingOnOwnSubjectsChangesNoReport(t *testing.T) {
	t.Parallel()
	bin := factlineBinary(t)
	ctx := ctxFor(t, 4*time.Minute)
	_, url := roleServer(t, "factline.conf")
	admin, _ := openAs(t, ctx, url, "FACTLINE", "admin")
	runnerBus, runnerRefused := openAs(t, ctx, url, "FACTLINE", "runner")
	meterBus, _ := openAs(t, ctx, url, "FACTLINE", "meter")

	// The fleet, each service on its own identity.
	svcCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	buses := map[string]*bus.Bus{fleet.Runner: runnerBus, fleet.Meter: meterBus}
	for _, role := range []string{fleet.Staller, fleet.Decider, fleet.Grader} {
		buses[role], _ = openAs(t, ctx, url, "FACTLINE", role)
	}
	services, err := fleet.Start(svcCtx, nil, fleet.Options{
		Connect: func(service string, _ int) (*bus.Bus, error) { return buses[service], nil },
		Per: map[string][]kit.Option{
			fleet.Runner: {runner.WithWorkDir(t.TempDir()), kit.WithWorkers(3), runner.WithDecisionTimeout(time.Minute)},
			fleet.Grader: {grader.WithWorkDir(t.TempDir())},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = services.Wait() })

	submitter, _ := openAs(t, ctx, url, "FACTLINE", "submitter")
	p, err := fleettest.SubmitFile(ctx, submitter, filepath.Join("testdata", "authority", "suite.yaml"), "forgery-test")
	if err != nil {
		t.Fatal(err)
	}
	reported := func() []events.SuiteReported {
		log, err := admin.LoadRun(ctx, "authority", events.SuiteScope)
		if err != nil {
			t.Fatal(err)
		}
		var out []events.SuiteReported
		for _, r := range log.Records {
			if sr, ok := r.Fact.Body.(events.SuiteReported); ok {
				out = append(out, sr)
			}
		}
		return out
	}
	for len(reported()) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the suite was never reported")
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := reported()[0]
	stored, err := admin.Blobs().Get(ctx, before.ReportDigest)
	if err != nil {
		t.Fatal(err)
	}

	// A run that did not pass, its end and its verdict.
	var victim string
	var ended bus.Record
	var real events.GraderVerdict
	for _, m := range measure.Roster(p.Submitted) {
		log, err := admin.LoadRun(ctx, "authority", m.Run)
		if err != nil {
			t.Fatal(err)
		}
		var end bus.Record
		var v *events.GraderVerdict
		for _, r := range log.Records {
			switch b := r.Fact.Body.(type) {
			case events.RunEnded:
				end = r
			case events.GradeVerdict:
				v = &b.Verdict
			}
		}
		if v != nil && v.Result.Type() != "passed" {
			victim, ended, real = m.Run, end, *v
			break
		}
	}
	if victim == "" {
		t.Fatal("every run of the authority suite passed; the test needs one that did not")
	}

	// The forgery: the grader's verdict, passed at a newer revision, on
	// the runner's own run.ended subject. The server accepts it.
	log, err := runnerBus.LoadRun(ctx, "authority", victim)
	if err != nil {
		t.Fatal(err)
	}
	forgedVerdict := real
	forgedVerdict.Revision++
	forgedVerdict.Result = events.VerdictOK()
	forgedVerdict.Vetoes = nil
	forged, err := events.NewFact(events.Meta{Suite: "authority", Run: victim, TaskGeneration: ended.Fact.TaskGeneration,
		Position: log.NextPosition(), Producer: events.Producer{Service: events.OwnerGrader, Instance: "grader-1"}},
		events.GradeVerdict{Verdict: forgedVerdict})
	if err != nil {
		t.Fatal(err)
	}
	data, err := events.Encode(forged)
	if err != nil {
		t.Fatal(err)
	}
	subject := "fact.authority." + victim + ".run.ended"
	ack, err := runnerBus.JetStream().Publish(ctx, subject, data)
	if err != nil {
		t.Fatalf("the runner may publish on %s: %v (refused %v)", subject, err, runnerRefused.list())
	}

	// Both consumers of run.ended dead-letter it.
	for _, consumer := range []string{grader.ConsumerName, meter.ConsumerName} {
		for found := false; !found; {
			dl, err := admin.DeadLetters(ctx, consumer)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dl {
				found = found || d.StreamSeq == ack.Sequence && strings.Contains(d.Reason, "does not match its subject")
			}
			if !found && ctx.Err() != nil {
				t.Fatalf("the %s consumer never dead-lettered the forgery: %+v", consumer, dl)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// A fresh meter (a restarted process) handed the run's end again, as
	// a redelivery would: it folds the whole suite and finds nothing new.
	if err := kittest.Must(meter.New(meterBus)).Handle(ctx, bus.Delivery{Record: ended, Deliveries: 2}); err != nil {
		t.Fatal(err)
	}
	if got := reported(); len(got) != 1 {
		t.Fatalf("%d suite.reported after the forgery; the last: %+v (the first: %+v)", len(got), got[len(got)-1], before)
	}

	// The readers, as the operators and analysts run them.
	as := func(role string) []string { return roleArgs(t, url, role) }
	cli := func(args ...string) (string, int) {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("factline %v: %v", args, err)
		}
		return string(out), exitCode(err)
	}
	mark := fmt.Sprintf("message %d", ack.Sequence)
	report, err := exec.CommandContext(ctx, bin, append([]string{"report", "authority", "--json"}, as("ops")...)...).Output()
	if err != nil || normalise(t, report) != normalise(t, stored) {
		t.Fatalf("report as ops after the forgery differs from the one reported before it (%v):\n%s\nwas\n%s", err, report, stored)
	}
	if out, code := cli(append([]string{"report", "authority"}, as("ops")...)...); code != 0 || !strings.Contains(out, "warning: "+mark) {
		t.Fatalf("report as ops does not name the forgery (exit %d):\n%s", code, out)
	}
	out, code := cli(append([]string{"audit", "--suite", "authority", "--finished"}, as("analyst")...)...)
	if code != 1 || !strings.Contains(out, "authority/"+victim+": fact-subject: "+mark) {
		t.Fatalf("audit as analyst (exit %d):\n%s", code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "authority/") && !strings.Contains(line, ": fact-subject: ") {
			t.Fatalf("audit as analyst found more than the forgery:\n%s", out)
		}
	}
	out, code = cli(append([]string{"tail", "--since", "start", "--no-follow", "--kind", "run.ended"}, as("ops")...)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%6d %s !! NOT A FACT OF ITS SUBJECT", ack.Sequence, subject)) {
		t.Fatalf("tail as ops does not flag the forgery (exit %d):\n%s", code, out)
	}
}

// exitCode is a finished command's exit status (0 when err is nil).
func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return 0
}
