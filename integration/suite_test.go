package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
	"github.com/factline/factline/services/runner"
	"github.com/factline/factline/suites"
)

// The suite of the meter stick's end-to-end test: three cases, each with a
// fixture holding a wrong answer and the check that wants the right one,
// under two scripted treatments, three trials each.
//
//   - alpha: both treatments answer right.
//   - beta: the baseline answers right; the variant writes a wrong answer and
//     rewrites check.sh to pass. Its run ends done (the stand-in decider
//     accepts any proposal), and the grader, which takes check.sh from the
//     fixture, fails it.
//   - gamma: both answer right, but the case also requires a lint
//     instrument whose command does not exist: every gamma attempt stays
//     pending, and the report counts it as pending.
//
// The treatments differ in their scripts (the model component) and in a
// stall threshold, so their comparison is a bundled one.
var e2eAnswers = map[string]string{"alpha": "1", "beta": "2", "gamma": "3"}

const e2eSuite = `name: e2e
description: the meter stick end to end
split: dev
cases:
  - {path: cases/alpha.yaml}
  - {path: cases/beta.yaml}
  - {path: cases/gamma.yaml}
treatments:
  - {path: treatments/baseline.yaml}
  - {path: treatments/variant.yaml}
trials: 3
required: [tests]
`

func e2eCase(id string) string {
	lint := ""
	if id == "gamma" {
		lint = "    - {id: lint, kind: command, command: factline-no-such-linter --strict}\n"
	}
	return fmt.Sprintf(`id: %s
instruction: Write the right answer to answer.txt, run ./check.sh, then call task_complete.
fixture: ../fixtures/%s
tools: [read_file, write_file, run_command, task_complete]
budget: {steps: 4, cost: 20}
checks:
  - {id: tests, command: ./check.sh}
grading:
  instruments:
    - {id: tests, kind: command, command: ./check.sh, timeout: 30s, tests_from_fixture: [check.sh]}
    - {id: answer, kind: file, path: answer.txt, matches: '^\d+\n$'}
    - {id: scope, kind: scope, allow: [answer.txt]}
%s`, id, id, lint)
}

func e2eScript(answer string, cheat bool) string {
	extra := ""
	if cheat {
		extra = `      - {id: x, name: write_file, args: {path: check.sh, content: "#!/bin/bash\nexit 0\n"}}` + "\n"
	}
	return fmt.Sprintf(`turns:
  - calls:
      - {id: w, name: write_file, args: {path: answer.txt, content: "%s\n"}}
%s      - {id: c, name: run_command, args: {command: ./check.sh}}
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/c]}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 2}
    reserve: 3
`, answer, extra)
}

// writeE2ESuite writes the suite and everything it names; it returns the
// suite file.
// writeTree writes files (path → content) under dir; paths ending in .sh
// are executable.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	testutil.WriteTree(t, dir, files)
}

func writeE2ESuite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"suite.yaml":               e2eSuite,
		"treatments/baseline.yaml": "id: baseline\nmodel: {provider: scripted, scripts: baseline}\n",
		"treatments/variant.yaml":  "id: variant\nmodel: {provider: scripted, scripts: variant}\nstall: {repeated_failure: 0}\n",
	}
	for id, answer := range e2eAnswers {
		files["cases/"+id+".yaml"] = e2eCase(id)
		files["fixtures/"+id+"/answer.txt"] = "0\n"
		files["fixtures/"+id+"/check.sh"] = fmt.Sprintf("#!/bin/bash\ngrep -qx %s answer.txt || { echo \"answer.txt:1: want %s, got $(cat answer.txt)\"; exit 1; }\n", answer, answer)
		files["treatments/baseline/"+id+".yaml"] = e2eScript(answer, false)
		wrong := answer
		if id == "beta" {
			wrong = "9"
		}
		files["treatments/variant/"+id+".yaml"] = e2eScript(wrong, id == "beta")
	}
	writeTree(t, dir, files)
	return filepath.Join(dir, "suite.yaml")
}

// instrumentsPerTrial is how many instruments one trial of every case under
// one treatment runs: 3 + 3 + 4 (gamma's lint).
const instrumentsPerTrial = 10

// e2eRun is what one run of the suite left: the report, the log and the
// grading work.
type e2eRun struct {
	report    measure.Report
	reported  events.SuiteReported
	logs      map[string]bus.RunLog
	atCrash   map[string]bool // run/instrument committed when the first grader died
	partial   bool            // the first grader died with a run's batch half done
	first     []string        // executions of the first grader
	second    []string        // executions of the grader that took over
	committed int             // grade.instrument facts in the log
}

// runE2E runs the whole suite on a fresh server: runner, stand-in decider,
// grader and meter, all connected only through the bus. With crash, the
// first grader dies (its connection drops) during the second instrument of
// a run's batch, after at least 20 executions, and a second grader takes
// over once the server redelivers.
func runE2E(t *testing.T, suitePath string, crash bool) e2eRun {
	t.Helper()
	b, srv := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	start := func(ctx context.Context, b *bus.Bus, o fleet.Options) *fleet.Fleet {
		f, err := fleet.Start(ctx, b, o)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	services := start(ctx, b, fleet.Options{Services: []string{fleet.Runner, fleet.Meter}, Per: map[string][]kit.Option{
		fleet.Runner: {runner.WithWorkDir(t.TempDir()), kit.WithWorkers(4), runner.WithDecisionTimeout(time.Minute)},
		fleet.Meter:  {kit.WithInstance("meter-e2e")},
	}})
	wg.Go(func() { _ = services.Wait() })
	wg.Go(func() { _ = fleettest.Decider{Bus: b}.Run(ctx) })

	// A short ack wait, so the server redelivers what a dead grader held
	// within the test's time, and deliveries to spare, so that a message
	// that waited past it behind a slow batch is not dead-lettered.
	consumer := bus.ConsumerConfig{Workers: 1, Prefetch: 1, AckWait: 2 * time.Second, MaxDeliver: 50}
	var mu sync.Mutex
	out := e2eRun{atCrash: map[string]bool{}}
	// grading starts a grader named name on b until ctx ends; seen is
	// told, under mu, of each instrument it runs.
	grading := func(ctx context.Context, b *bus.Bus, name string, seen func(grader.Execution)) *fleet.Fleet {
		return start(ctx, b, fleet.Options{Services: []string{fleet.Grader}, Per: map[string][]kit.Option{fleet.Grader: {
			kit.WithInstance(name), grader.WithWorkDir(t.TempDir()), kit.WithConsumer(consumer),
			grader.WithExecuteHook(func(_ context.Context, x grader.Execution) {
				mu.Lock()
				defer mu.Unlock()
				seen(x)
			}),
		}}})
	}
	second := func() {
		g2 := grading(ctx, b, "grader-2", func(x grader.Execution) { out.second = append(out.second, x.Run+"/"+string(x.Instrument)) })
		wg.Go(func() { _ = g2.Wait() })
	}
	if !crash {
		second()
	} else {
		b1 := bustest.OpenWith(t, srv, bus.Config{})
		ctx1, kill := context.WithCancel(ctx)
		perRun := map[string]int{}
		died := make(chan struct{})
		g1 := grading(ctx1, b1, "grader-1", func(x grader.Execution) {
			out.first = append(out.first, x.Run+"/"+string(x.Instrument))
			perRun[x.Run]++
			if len(out.first) >= 20 && perRun[x.Run] == 2 && ctx1.Err() == nil {
				b1.Conn().Close() // killed: nothing more is acknowledged or handed back
				kill()
			}
		})
		wg.Go(func() { _ = g1.Wait(); close(died) })
		p := submitE2E(t, ctx, b, suitePath)
		select {
		case <-died:
		case <-ctx.Done():
			mu.Lock()
			n := len(out.first)
			mu.Unlock()
			t.Fatalf("the first grader never died (%d executions)", n)
		}
		for _, m := range measure.Roster(p.Submitted) {
			log, err := b.LoadRun(ctx, "e2e", m.Run)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range log.Facts() {
				if gi, ok := f.Body.(events.GradeInstrument); ok {
					out.atCrash[m.Run+"/"+string(gi.Result.Instrument)] = true
					n++
				}
			}
			want := 3
			if m.Case == "gamma" {
				want = 4
			}
			out.partial = out.partial || n > 0 && n < want
		}
		second()
		return finishE2E(t, ctx, b, p, &out, &mu)
	}
	p := submitE2E(t, ctx, b, suitePath)
	return finishE2E(t, ctx, b, p, &out, &mu)
}

func submitE2E(t *testing.T, ctx context.Context, b *bus.Bus, suitePath string) *suites.Published {
	t.Helper()
	p, err := fleettest.SubmitFile(ctx, b, suitePath, "e2e-test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// finishE2E waits for suite.reported and collects what the run left.
func finishE2E(t *testing.T, ctx context.Context, b *bus.Bus, p *suites.Published, out *e2eRun, mu *sync.Mutex) e2eRun {
	t.Helper()
	subj, _ := events.FactSubject("e2e", events.SuiteScope, events.KindSuiteReported)
	sub, err := b.Conn().SubscribeSync(subj)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for found := false; !found; {
		log, err := b.LoadRun(ctx, "e2e", events.SuiteScope)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range log.Records {
			if sr, ok := r.Fact.Body.(events.SuiteReported); ok {
				out.reported, found = sr, true
			}
		}
		if !found {
			wctx, c := context.WithTimeout(ctx, time.Second)
			_, _ = sub.NextMsgWithContext(wctx)
			c()
			if ctx.Err() != nil {
				r, _ := meter.Report(context.Background(), b, "e2e")
				var sb strings.Builder
				_ = measure.WriteTable(&sb, r)
				t.Fatalf("the suite was never reported; where it stands:\n%s", sb.String())
			}
		}
	}
	data, err := b.Blobs().Get(ctx, out.reported.ReportDigest)
	if err != nil {
		t.Fatal(err)
	}
	if out.report, err = meter.Report(ctx, b, "e2e"); err != nil {
		t.Fatal(err)
	}
	if again, _ := measure.EncodeJSON(out.report); string(again) != string(data) {
		t.Fatal("the stored report differs from the one rebuilt from the log")
	}
	out.logs = map[string]bus.RunLog{}
	for _, m := range measure.Roster(p.Submitted) {
		log, err := b.LoadRun(ctx, "e2e", m.Run)
		if err != nil {
			t.Fatal(err)
		}
		out.logs[m.Run] = log
		for _, f := range log.Facts() {
			if _, ok := f.Body.(events.GradeInstrument); ok {
				out.committed++
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	res := *out
	res.first, res.second = append([]string(nil), out.first...), append([]string(nil), out.second...)
	return res
}

// withoutWallTime is the report with its wall times zeroed: the one part
// of a report that no two runs share.
func withoutWallTime(r measure.Report) string {
	for i := range r.Treatments {
		r.Treatments[i].Usage.WallMillis = 0
	}
	r.Attempts = append([]measure.AttemptRow(nil), r.Attempts...)
	for i := range r.Attempts {
		r.Attempts[i].Millis = nil
	}
	r.Comparisons = append([]measure.Comparison(nil), r.Comparisons...)
	for i, c := range r.Comparisons {
		if c.Usage != nil {
			u := *c.Usage
			u.WallMillis = nil
			r.Comparisons[i].Usage = &u
		}
	}
	b, _ := measure.EncodeJSON(r)
	return string(b)
}

// Must show: a suite of two treatments × three trials of three cases,
// graded with one grader killed mid-batch and restarted. The resumed grader
// runs only the pending instruments, no actor is rerun, no run ending
// changes, and the report is identical to that of a run without the crash.
func TestSuiteEndToEndWithGraderCrash(t *testing.T) {
	t.Parallel()
	path := writeE2ESuite(t)
	clean := runE2E(t, path, false)
	crashed := runE2E(t, path, true)

	total := 2 * 3 * instrumentsPerTrial
	for name, r := range map[string]e2eRun{"clean": clean, "crashed": crashed} {
		if r.committed != total {
			t.Errorf("%s: %d instrument results, want %d", name, r.committed, total)
		}
		for run, log := range r.logs {
			claims, ends, turns := 0, 0, 0
			seen := map[string]int{}
			for _, f := range log.Facts() {
				switch b := f.Body.(type) {
				case events.RunClaimed:
					claims++
				case events.RunEnded:
					ends++
				case events.TurnStarted:
					turns++
				case events.GradeInstrument:
					seen[string(b.Result.Instrument)]++
				}
			}
			if claims != 1 || ends != 1 || turns != 1 {
				t.Errorf("%s %s: %d claims, %d ends, %d turns: the actor ran more than once", name, run, claims, ends, turns)
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("%s %s: %s has %d results", name, run, id, n)
				}
			}
		}
	}
	// The crash: mid-batch, and the resumed grader ran exactly what was
	// pending.
	if !crashed.partial || len(crashed.atCrash) < 19 {
		t.Fatalf("the first grader died with %d results committed (mid-batch: %v)", len(crashed.atCrash), crashed.partial)
	}
	if len(crashed.second) != total-len(crashed.atCrash) {
		t.Fatalf("the resumed grader ran %d instruments; %d were pending", len(crashed.second), total-len(crashed.atCrash))
	}
	for _, x := range crashed.second {
		if crashed.atCrash[x] {
			t.Fatalf("the resumed grader reran %s, which had a result", x)
		}
	}
	if len(clean.second) != total {
		t.Fatalf("without a crash the grader ran %d instruments, want %d", len(clean.second), total)
	}
	// The report does not know there was a crash.
	if a, b := withoutWallTime(clean.report), withoutWallTime(crashed.report); a != b {
		t.Fatalf("the reports differ:\n--- clean\n%s\n--- crashed\n%s", a, b)
	}
	if clean.reported.Attempts != crashed.reported.Attempts || clean.reported.Passed != crashed.reported.Passed ||
		clean.reported.Pending != crashed.reported.Pending || clean.reported.Failed != crashed.reported.Failed {
		t.Fatalf("suite.reported differs: %+v vs %+v", clean.reported, crashed.reported)
	}

	// And what it says.
	r := crashed.report
	var sb strings.Builder
	if err := measure.WriteTable(&sb, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", sb.String())
	base, variant := r.Treatments[0], r.Treatments[1]
	if !r.Complete || base.Planned != 9 || base.Ended != 9 || base.Passed != 6 || base.Failed != 0 || base.Pending != 3 ||
		base.Graded != 6 || base.HarnessErrors != 0 || base.Excluded != 0 {
		t.Errorf("baseline: %+v", base)
	}
	// The cheating variant's beta attempts ended done, and are failed.
	if variant.Passed != 3 || variant.Failed != 3 || variant.Pending != 3 {
		t.Errorf("variant: %+v", variant)
	}
	for _, a := range r.Attempts {
		if a.Case == "beta" && a.Treatment == "variant" && (a.Status != events.RunDone || a.Outcome != measure.OutcomeFailed) {
			t.Errorf("the cheater %s: ended %s, graded %s", a.Run, a.Status, a.Outcome)
		}
		if a.Case == "gamma" && (a.Outcome != measure.OutcomePending || !strings.Contains(a.Reason, "lint")) {
			t.Errorf("gamma %s: %s (%s), want pending on lint", a.Run, a.Outcome, a.Reason)
		}
	}
	// Through names the stream sequence the meter's report folded to: any
	// fact of the suite, so only that it is set is checked here.
	if crashed.reported.Through == 0 {
		t.Errorf("suite.reported names no fact it folded through: %+v", crashed.reported)
	}
	if want := (events.SuiteReported{ReportDigest: crashed.reported.ReportDigest, Attempts: 18, Passed: 9, Failed: 3, Pending: 6,
		Through: crashed.reported.Through}); crashed.reported != want {
		t.Errorf("suite.reported %+v, want %+v", crashed.reported, want)
	}
	c := r.Comparisons[0]
	if c.Label != measure.LabelBundled || strings.Join(c.Differences, ",") != "model,stall" {
		t.Errorf("the two treatments differ in model and stall: %q %v", c.Label, c.Differences)
	}
	if c.Pairs != 6 || c.McNemar == nil || c.McNemar.OnlyA != 3 || c.McNemar.OnlyB != 0 || c.McNemar.P != 0.25 {
		t.Errorf("comparison %+v %+v", c, c.McNemar)
	}
	if base.Usage.Tokens == nil || *base.Usage.Tokens != 9*110 || base.Usage.TokensUnknown != 0 || base.Usage.Cost == nil || *base.Usage.Cost != 9*2 {
		t.Errorf("usage %+v", base.Usage)
	}
}
