package grader_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/grader/grade"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
	"github.com/factline/factline/workspace"
)

const suite = "gs"

// env is a real embedded JetStream server and a case whose fixture holds a
// wrong answer and the test that checks it.
type env struct {
	t   *testing.T
	b   *bus.Bus
	srv *bus.Embedded
	ctx context.Context
}

func start(t *testing.T) *env {
	t.Helper()
	b, srv := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &env{t: t, b: b, srv: srv, ctx: ctx}
}

var fixtureFiles = map[string]string{
	"answer.txt":      "3\n",
	"check.sh":        "#!/bin/bash\ngrep -qx 4 answer.txt || { echo \"answer.txt:1: want 4, got $(cat answer.txt)\"; exit 1; }\n",
	"tests/helper.sh": "#!/bin/bash\ntrue\n",
	"data/out.json":   `{"result": [{"value": 4}], "ok": true}`,
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	testutil.WriteTree(t, dir, files)
	return dir
}

// store stores a tree as the runner would seal it and returns its digest.
func (e *env) store(files map[string]string) events.Digest {
	e.t.Helper()
	m, err := workspace.Store(e.ctx, e.b.Blobs(), writeTree(e.t, files), workspace.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	return m.Digest()
}

// candidate is the fixture with some files changed ("" removes one).
func candidate(changes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range fixtureFiles {
		out[k] = v
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// publish stores the case (with the given grading YAML) and a scripted
// treatment, and returns run.requested for them.
func (e *env) publish(grading string) events.RunRequested {
	e.t.Helper()
	c, err := cases.ParseCase("case.yaml", []byte("id: fix\ninstruction: make check.sh pass\n"+grading))
	if err != nil {
		e.t.Fatal(err)
	}
	c.FixtureDigest = e.store(fixtureFiles)
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: actor\nmodel: {provider: openai, name: actor-model}\n"))
	if err != nil {
		e.t.Fatal(err)
	}
	cd, _ := c.Encode()
	td, _ := tr.Encode()
	req := events.RunRequested{Case: c.ID, Treatment: tr.ID, Trial: 1}
	if req.CaseDigest, err = e.b.Blobs().Put(e.ctx, cd); err != nil {
		e.t.Fatal(err)
	}
	if req.TreatmentDigest, err = e.b.Blobs().Put(e.ctx, td); err != nil {
		e.t.Fatal(err)
	}
	return req
}

// append commits facts to a run as their owners would.
func (e *env) append(run string, bodies ...events.Body) {
	e.t.Helper()
	for _, body := range bodies {
		_, err := e.b.Commit(e.ctx, nil, suite, run, func(log bus.RunLog) ([]bus.Pending, error) {
			f, err := events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: log.NextPosition(),
				Producer: events.Producer{Service: body.Kind().Owner(), Instance: "test"}}, body)
			return []bus.Pending{{Fact: f}}, err
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// attempt commits a finished run whose candidate is the given tree.
func (e *env) attempt(run string, req events.RunRequested, files map[string]string) events.Digest {
	e.t.Helper()
	snap := e.store(files)
	e.append(run, req, events.CandidateSealed{SnapshotDigest: snap, Files: uint32(len(files))},
		events.RunEnded{Status: events.RunDone, Reason: "test decider: proposal accepted"})
	return snap
}

func (e *env) load(run string) bus.RunLog {
	e.t.Helper()
	log, err := e.b.LoadRun(e.ctx, suite, run)
	if err != nil {
		e.t.Fatal(err)
	}
	return log
}

func (e *env) verdict(run string) events.GraderVerdict {
	e.t.Helper()
	var out []events.GraderVerdict
	for _, f := range e.load(run).Facts() {
		if v, ok := f.Body.(events.GradeVerdict); ok {
			out = append(out, v.Verdict)
		}
	}
	if len(out) == 0 {
		e.t.Fatalf("%s has no verdict", run)
	}
	return out[len(out)-1]
}

func result(v events.GraderVerdict, id events.InstrumentID) events.InstrumentResult {
	for _, r := range v.Instruments {
		if r.Instrument == id {
			return r
		}
	}
	return events.InstrumentResult{}
}

func (e *env) grader(opts ...kit.Option) *grader.Service {
	return e.graderOn(e.b, opts...)
}

func (e *env) graderOn(b *bus.Bus, opts ...kit.Option) *grader.Service {
	return kittest.Must(grader.New(b, append([]kit.Option{grader.WithWorkDir(e.t.TempDir()), kit.WithInstance("g-test")}, opts...)...))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const testsInstrument = `grading:
  instruments:
    - {id: tests, kind: command, command: ./check.sh, timeout: 30s, tests_from_fixture: [check.sh, "tests/*"]%s}
`

// Must show: a candidate that edits the test file to pass is not graded as
// passed. Its own check.sh says exit 0; the grader runs the fixture's.
func TestCandidateThatEditsItsTestsIsNotPassed(t *testing.T) {
	e := start(t)
	g := e.grader()
	cheat := candidate(map[string]string{"check.sh": "#!/bin/bash\nexit 0\n", "tests/extra.sh": "#!/bin/bash\nexit 0\n"})

	restore := e.publish(fmt.Sprintf(testsInstrument, ""))
	e.attempt("cheat-restore", restore, cheat)
	must(t, g.Grade(e.ctx, suite, "cheat-restore"))
	v := e.verdict("cheat-restore")
	r := result(v, "tests")
	if v.Result.Type() != "failed" || r.Outcome != events.InstrumentFailed {
		t.Fatalf("restore mode: %s / %s (%s)", v.Result.Type(), r.Outcome, r.Detail)
	}
	if !strings.Contains(r.Detail, "restored from the fixture: check.sh, tests/extra.sh") || !strings.Contains(r.Detail, "want 4, got 3") {
		t.Fatalf("the detail should name the restored files and the real failure: %q", r.Detail)
	}

	refuse := e.publish(fmt.Sprintf(testsInstrument, ", on_test_edit: refuse"))
	e.attempt("cheat-refuse", refuse, cheat)
	must(t, g.Grade(e.ctx, suite, "cheat-refuse"))
	v = e.verdict("cheat-refuse")
	if r := result(v, "tests"); v.Result.Type() != "failed" || !strings.Contains(r.Detail, "refused") || !strings.Contains(r.Detail, "check.sh") {
		t.Fatalf("refuse mode: %s (%s)", v.Result.Type(), r.Detail)
	}

	// The control: the same candidate under an instrument that trusts the
	// candidate's tests passes. Protection is what makes the difference.
	open := e.publish("grading:\n  instruments:\n    - {id: tests, kind: command, command: ./check.sh}\n")
	e.attempt("cheat-open", open, cheat)
	must(t, g.Grade(e.ctx, suite, "cheat-open"))
	if v := e.verdict("cheat-open"); v.Result.Type() != "passed" {
		t.Fatalf("control: %s", v.Result.Type())
	}

	// An honest fix passes under protection.
	e.attempt("honest", restore, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, g.Grade(e.ctx, suite, "honest"))
	if v := e.verdict("honest"); v.Result.Type() != "passed" {
		t.Fatalf("honest fix: %s (%s)", v.Result.Type(), result(v, "tests").Detail)
	}
}

// Must show: a required instrument that cannot run (its command is missing)
// leaves the attempt pending, not failed.
func TestRequiredInstrumentThatCannotRunIsPending(t *testing.T) {
	e := start(t)
	req := e.publish(`grading:
  instruments:
    - {id: tests, kind: command, command: ./check.sh}
    - {id: lint, kind: command, command: factline-no-such-linter --strict}
`)
	e.attempt("r1", req, candidate(map[string]string{"answer.txt": "5\n"}))
	must(t, e.grader().Grade(e.ctx, suite, "r1"))
	v := e.verdict("r1")
	p, ok := v.Result.Variant().(events.VerdictPending)
	if !ok || len(p.Instruments) != 1 || p.Instruments[0] != "lint" {
		t.Fatalf("verdict %s %+v, want pending on lint (tests failed, but a required check never ran)", v.Result.Type(), v.Result.Variant())
	}
	if r := result(v, "lint"); r.Outcome != events.InstrumentErrored || !strings.Contains(r.Detail, "exit 127") {
		t.Fatalf("lint: %+v", r)
	}
	if r := result(v, "tests"); r.Outcome != events.InstrumentFailed {
		t.Fatalf("tests: %+v", r)
	}
}

// Rule: an invalid answer differs from a check that never ran.
func TestNoCandidateIsInvalid(t *testing.T) {
	e := start(t)
	req := e.publish(fmt.Sprintf(testsInstrument, ""))
	e.append("nocand", req, events.RunEnded{Status: events.RunErrored, Reason: "harness: workspace could not be opened"})
	g := e.grader()
	must(t, g.Grade(e.ctx, suite, "nocand"))
	must(t, g.Grade(e.ctx, suite, "nocand")) // again: nothing new
	log := e.load("nocand")
	var verdicts []events.GraderVerdict
	for _, f := range log.Facts() {
		if v, ok := f.Body.(events.GradeVerdict); ok {
			verdicts = append(verdicts, v.Verdict)
		}
	}
	if len(verdicts) != 1 || verdicts[0].Result.Type() != "invalid" || verdicts[0].SnapshotID != grade.NoCandidate {
		t.Fatalf("verdicts %+v, want one invalid", verdicts)
	}
	// A run that has not ended and has no candidate is not graded yet.
	e.append("running", req)
	must(t, g.Grade(e.ctx, suite, "running"))
	if n := len(e.load("running").Records); n != 1 {
		t.Fatalf("a running run got %d facts", n)
	}
}

func TestFileAndScopeInstruments(t *testing.T) {
	e := start(t)
	req := e.publish(`grading:
  instruments:
    - {id: has-answer, kind: file, path: answer.txt, exists: true}
    - {id: no-notes, kind: file, path: NOTES.md, exists: false}
    - {id: says-four, kind: file, path: answer.txt, contains: "4"}
    - {id: one-line, kind: file, path: answer.txt, matches: '^\d+\n$'}
    - {id: json-value, kind: file, path: data/out.json, json_path: '$.result[0].value', equals: 4}
    - {id: json-object, kind: file, path: data/out.json, json_path: '$.result[0]', equals: {value: 4}}
    - {id: scope, kind: scope, allow: [answer.txt, "data/*"]}
`)
	e.attempt("good", req, candidate(map[string]string{"answer.txt": "4\n"}))
	e.attempt("bad", req, candidate(map[string]string{"answer.txt": "five\n", "NOTES.md": "x", "check.sh": "",
		"data/out.json": `{"result": [{"value": "4"}]}`}))
	g := e.grader()
	must(t, g.Grade(e.ctx, suite, "good"))
	must(t, g.Grade(e.ctx, suite, "bad"))
	good, bad := e.verdict("good"), e.verdict("bad")
	if good.Result.Type() != "passed" {
		t.Fatalf("good: %+v", good)
	}
	for _, id := range []events.InstrumentID{"has-answer", "no-notes", "says-four", "one-line", "json-value", "json-object", "scope"} {
		if r := result(good, id); r.Outcome != events.InstrumentPassed {
			t.Errorf("good %s: %+v", id, r)
		}
	}
	want := map[events.InstrumentID]events.InstrumentOutcome{"has-answer": events.InstrumentPassed, "no-notes": events.InstrumentFailed,
		"says-four": events.InstrumentFailed, "one-line": events.InstrumentFailed, "json-value": events.InstrumentFailed,
		"json-object": events.InstrumentFailed, "scope": events.InstrumentFailed}
	for id, o := range want {
		if r := result(bad, id); r.Outcome != o {
			t.Errorf("bad %s: %s (%s), want %s", id, r.Outcome, r.Detail, o)
		}
	}
	if d := result(bad, "scope").Detail; !strings.Contains(d, "NOTES.md (added)") || !strings.Contains(d, "check.sh (removed)") {
		t.Errorf("scope detail %q", d)
	}
	if bad.Result.Type() != "failed" || len(bad.Vetoes) != 6 {
		t.Errorf("bad: %s with %d vetoes", bad.Result.Type(), len(bad.Vetoes))
	}
}

func TestJudge(t *testing.T) {
	e := start(t)
	judge := func(id, model, script string, required bool) string {
		return fmt.Sprintf("    - {id: %s, kind: judge, model: {provider: scripted, name: %s}, required: %v, binding: true, rubric: answer is 4, files: [answer.txt], script: %q}\n",
			id, model, required, script)
	}
	req := e.publish("grading:\n  instruments:\n" +
		judge("approve", "judge-a", "turns:\n  - text: \"Looks right.\\nVERDICT: PASS\"\n    usage: {input_tokens: 700, output_tokens: 30, cost: 5}\n", false) +
		judge("reject", "judge-b", "turns:\n  - text: \"VERDICT: FAIL\"\n", false) +
		judge("down", "judge-c", "turns:\n  - error: unavailable\n", false) +
		judge("mute", "judge-d", "turns:\n  - text: I am not sure.\n", false) +
		"  allow_missing_advisory: true\n")
	e.attempt("judged", req, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, e.grader().Grade(e.ctx, suite, "judged"))
	v := e.verdict("judged")
	for id, o := range map[events.InstrumentID]events.InstrumentOutcome{"approve": events.InstrumentPassed,
		"reject": events.InstrumentFailed, "down": events.InstrumentAbstained, "mute": events.InstrumentAbstained} {
		if r := result(v, id); r.Outcome != o {
			t.Errorf("%s: %s (%s), want %s", id, r.Outcome, r.Detail, o)
		}
	}
	// The rejecting judge is binding: its failure fails the grade; the
	// ones that could not judge abstain and fail nothing.
	if v.Result.Type() != "failed" || len(v.Vetoes) != 1 || v.Vetoes[0].Instrument != "reject" {
		t.Fatalf("verdict %s, vetoes %+v", v.Result.Type(), v.Vetoes)
	}
	// Every judge model call is recorded as the evaluator's spend, answered
	// or not; usage the judge's provider did not report stays unknown.
	calls := map[events.InstrumentID]*events.JudgeCall{}
	for _, f := range e.load("judged").Facts() {
		if gi, ok := f.Body.(events.GradeInstrument); ok {
			calls[gi.Result.Instrument] = gi.Judge
		}
	}
	if c := calls["approve"]; c == nil || c.Model != "scripted/judge-a" || c.Usage == nil || c.Usage.InputTokens != 700 || c.Usage.Cost == nil || *c.Usage.Cost != 5 {
		t.Fatalf("the approving judge's call: %+v", c)
	}
	for _, id := range []events.InstrumentID{"reject", "down", "mute"} {
		if c := calls[id]; c == nil || c.Usage != nil {
			t.Fatalf("%s: judge call %+v, want one with unknown usage", id, c)
		}
	}

	// Never the actor's own model: the judge abstains.
	self := e.publish("grading:\n  instruments:\n    - {id: tests, kind: command, command: ./check.sh}\n" +
		"    - {id: self, kind: judge, model: {provider: openai, name: actor-model}, rubric: r, required: true}\n")
	e.attempt("selfjudged", self, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, e.grader().Grade(e.ctx, suite, "selfjudged"))
	v = e.verdict("selfjudged")
	if r := result(v, "self"); r.Outcome != events.InstrumentAbstained || !strings.Contains(r.Detail, "actor's own model") {
		t.Fatalf("self-judging: %+v", r)
	}
	if v.Result.Type() != "abstained" {
		t.Fatalf("a required judge that abstains leaves the grade abstained, got %s", v.Result.Type())
	}
	for _, f := range e.load("selfjudged").Facts() {
		if gi, ok := f.Body.(events.GradeInstrument); ok && gi.Judge != nil {
			t.Fatalf("%s recorded a judge call it never made: %+v", gi.Result.Instrument, gi.Judge)
		}
	}
}

// Rule: a re-grade (new instrument version) appends a revision; a later
// check that disagrees appends grade.conflict and changes no earlier grade.
func TestRegradeOnTheBus(t *testing.T) {
	e := start(t)
	req := e.publish(`grading:
  instruments:
    - {id: tests, kind: command, command: ./check.sh}
    - {id: scope, kind: scope, allow: [answer.txt]}
`)
	e.attempt("r1", req, candidate(map[string]string{"answer.txt": "4\n"}))
	var execs []string
	var mu sync.Mutex
	g := e.grader(grader.WithExecuteHook(func(_ context.Context, x grader.Execution) {
		mu.Lock()
		execs = append(execs, string(x.Instrument)+"@"+x.Version)
		mu.Unlock()
	}))
	must(t, g.Grade(e.ctx, suite, "r1"))
	first := e.load("r1")
	v2, err := cases.ParseCase("v2.yaml", []byte(`id: fix
instruction: x
grading:
  instruments:
    - {id: tests, kind: command, version: "2", command: "grep -qx 5 answer.txt"}
    - {id: scope, kind: scope, allow: [answer.txt]}
`))
	must(t, err)
	must(t, g.Regrade(e.ctx, suite, "r1", v2.Grading))
	must(t, g.Regrade(e.ctx, suite, "r1", v2.Grading)) // again: nothing new
	log := e.load("r1")
	for i, r := range first.Records {
		if log.Records[i].Fact.ID != r.Fact.ID {
			t.Fatalf("fact %d changed", i)
		}
	}
	var verdicts []events.GraderVerdict
	var conflicts []events.GradeConflict
	for _, f := range log.Facts() {
		switch b := f.Body.(type) {
		case events.GradeVerdict:
			verdicts = append(verdicts, b.Verdict)
		case events.GradeConflict:
			conflicts = append(conflicts, b)
		}
	}
	if len(verdicts) != 2 || verdicts[0].Revision != 1 || verdicts[0].Result.Type() != "passed" ||
		verdicts[1].Revision != 2 || verdicts[1].Result.Type() != "failed" {
		t.Fatalf("verdicts %+v", verdicts)
	}
	if len(conflicts) != 1 || conflicts[0].Instrument != "tests" || conflicts[0].ConflictsWith != 1 {
		t.Fatalf("conflicts %+v", conflicts)
	}
	// The conflict precedes the revision it disputes, so whoever folds the
	// log up to that verdict (the meter, on its delivery) sees the dispute.
	var kinds []events.Kind
	for _, f := range log.Facts()[len(first.Records):] {
		if f.Kind() != events.KindGradeInstrument {
			kinds = append(kinds, f.Kind())
		}
	}
	if !slices.Equal(kinds, []events.Kind{events.KindGradeConflict, events.KindGradeVerdict}) {
		t.Fatalf("the re-grade appended %v, want the conflict before its verdict", kinds)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(execs, " ") != "tests@1 scope@1 tests@2" {
		t.Fatalf("executions %v: the re-grade must reuse scope@1 and run only tests@2", execs)
	}
}

// Rule: a grader crash mid-batch resumes exactly the pending instruments,
// never reruns the actor and never changes why the run ended. The first
// grader dies during its fifth instrument (its connection drops, as when its
// process is killed: it acknowledges nothing more and hands nothing back);
// once the server redelivers, the second runs only what has no committed
// result.
func TestCrashMidBatchResumesExactlyThePendingInstruments(t *testing.T) {
	e := start(t)
	req := e.publish(`grading:
  instruments:
    - {id: tests, kind: command, command: ./check.sh, tests_from_fixture: [check.sh]}
    - {id: answer, kind: file, path: answer.txt, contains: "4"}
    - {id: scope, kind: scope, allow: [answer.txt]}
`)
	runs := []string{"a1", "a2", "a3"}
	for i, r := range runs {
		e.attempt(r, req, candidate(map[string]string{"answer.txt": fmt.Sprintf("%d\n", 3+i%2)}))
	}
	before := map[string]bus.RunLog{}
	for _, r := range runs {
		before[r] = e.load(r)
	}
	type exec struct{ run, instrument string }
	var mu sync.Mutex
	var first, second []exec
	// A short ack wait, so the server redelivers what the dead grader held
	// within the test's time, and deliveries to spare, so that a message
	// that waited past it behind a slow batch is not dead-lettered.
	consumer := bus.ConsumerConfig{Workers: 1, Prefetch: 1, AckWait: 2 * time.Second, MaxDeliver: 50}
	b1 := bustest.OpenWith(t, e.srv, bus.Config{})
	ctx1, cancel1 := context.WithCancel(e.ctx)
	g1 := e.graderOn(b1, kit.WithInstance("g1"), kit.WithConsumer(consumer),
		grader.WithExecuteHook(func(_ context.Context, x grader.Execution) {
			mu.Lock()
			defer mu.Unlock()
			first = append(first, exec{x.Run, string(x.Instrument)})
			if len(first) == 5 {
				// Dies while this instrument runs: its result is lost.
				b1.Conn().Close()
				cancel1()
			}
		}))
	done := make(chan error, 1)
	go func() { done <- g1.Run(ctx1) }()
	select {
	case <-done: // a dead connection's consumer ends with an error or without
	case <-e.ctx.Done():
		t.Fatal("the first grader never died")
	}
	committed := map[exec]bool{}
	partial := false
	for _, r := range runs {
		n := 0
		for _, f := range e.load(r).Facts() {
			if gi, ok := f.Body.(events.GradeInstrument); ok {
				committed[exec{r, string(gi.Result.Instrument)}] = true
				n++
			}
		}
		partial = partial || (n > 0 && n < 3)
	}
	if len(committed) != 4 || !partial {
		t.Fatalf("after the crash %d results are committed (partial batch: %v); want 4, one batch cut short", len(committed), partial)
	}

	g2 := e.grader(kit.WithInstance("g2"), kit.WithConsumer(consumer), grader.WithExecuteHook(func(_ context.Context, x grader.Execution) {
		mu.Lock()
		defer mu.Unlock()
		second = append(second, exec{x.Run, string(x.Instrument)})
	}))
	ctx2, stop := context.WithCancel(e.ctx)
	go func() { done <- g2.Run(ctx2) }()
	defer func() { stop(); <-done }()
	for _, r := range runs {
		waitVerdict(t, e, r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(second) != 9-len(committed) {
		t.Fatalf("the resumed grader ran %d instruments, want exactly the %d pending: %v", len(second), 9-len(committed), second)
	}
	for _, x := range second {
		if committed[x] {
			t.Fatalf("the resumed grader reran %v, which had a committed result", x)
		}
	}
	for _, r := range runs {
		log := e.load(r)
		results := map[string]int{}
		for _, f := range log.Facts() {
			if gi, ok := f.Body.(events.GradeInstrument); ok {
				results[string(gi.Result.Instrument)]++
			}
		}
		for _, id := range []string{"tests", "answer", "scope"} {
			if results[id] != 1 {
				t.Errorf("%s: %d results for %s", r, results[id], id)
			}
		}
		// The grader appended only its own facts: the runner's are the
		// same ones, and the run ended once, for the same reason.
		var own []events.Fact
		for _, f := range log.Facts() {
			if f.Producer.Service != events.OwnerGrader {
				own = append(own, f)
			}
		}
		if len(own) != len(before[r].Records) {
			t.Fatalf("%s: %d non-grader facts, had %d", r, len(own), len(before[r].Records))
		}
		for i, f := range own {
			if f.ID != before[r].Records[i].Fact.ID {
				t.Fatalf("%s: fact %d is not the one committed before grading", r, i)
			}
		}
	}
	if v := e.verdict("a2"); v.Result.Type() != "passed" {
		t.Errorf("a2 (answer 4): %s", v.Result.Type())
	}
	if v := e.verdict("a1"); v.Result.Type() != "failed" {
		t.Errorf("a1 (answer 3): %s", v.Result.Type())
	}
}

func waitVerdict(t *testing.T, e *env, run string) {
	t.Helper()
	for {
		for _, f := range e.load(run).Facts() {
			if _, ok := f.Body.(events.GradeVerdict); ok {
				return
			}
		}
		select {
		case <-e.ctx.Done():
			t.Fatalf("%s was never graded", run)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Names a case chooses never collide with names factline chooses: an
// instrument called "verdict" at version 1 once had the message ID of the
// revision-1 verdict, which was then taken for committed, and the attempt
// waited for its grade forever.
func TestInstrumentNamedLikeAVerdictIsGraded(t *testing.T) {
	e := start(t)
	req := e.publish(`grading:
  instruments:
    - {id: verdict, kind: file, path: answer.txt, exists: true}
    - {id: conflict, kind: file, path: answer.txt, contains: "4"}
`)
	e.attempt("named", req, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, e.grader().Grade(e.ctx, suite, "named"))
	v := e.verdict("named")
	if v.Result.Type() != "passed" || result(v, "verdict").Outcome != events.InstrumentPassed || result(v, "conflict").Outcome != events.InstrumentPassed {
		t.Fatalf("verdict %+v", v)
	}
}
