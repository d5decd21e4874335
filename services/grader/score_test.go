package grader_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

const scoredGrading = `grading:
  instruments:
    - {id: tests, kind: command, command: "mkdir -p out && cp report.src.xml out/report.xml; %s", score: {format: junit, file: out/report.xml}}
    - {id: bench, kind: command, command: "echo start; echo '{\"score\": 0.94, \"p50_ms\": 120}'", score: {format: json_line}}
    - {id: scope, kind: scope, allow: ["*"]}
  scorers:
    - {id: correctness, instrument: tests, decides: true, pass_at: %s}
    - {id: latency, instrument: bench, key: p50_ms, scale: [0, 1000], higher_is_better: false}
    - {id: in_scope, instrument: scope}
`

// Must show: a command's JUnit report (a real runner's, testdata) scores as
// its pass fraction with its test cases in the result; the deciding scorer
// passes a suite that passed 4 of 7 tests at pass_at 0.5 although the
// command exited 1, and fails it at 0.9; a JSON score line and a scope
// check score beside it; a command whose report is missing is failed by
// its deciding scorer, and one that cannot run stays errored.
func TestCommandScoresAndTheDecidingScorer(t *testing.T) {
	report, err := os.ReadFile("grade/testdata/junit/gotestsum.xml")
	if err != nil {
		t.Fatal(err)
	}
	e := start(t)
	g := e.grader()
	files := candidate(map[string]string{"report.src.xml": string(report)})
	for _, c := range []struct {
		name, tail, passAt string
		outcome            events.InstrumentOutcome
		verdict            string
		correctness        string // the value, or what its missing reason says
	}{
		{"reaches", "exit 1", "0.5", events.InstrumentPassed, "passed", "0.5714285714"},
		{"falls short", "exit 1", "0.9", events.InstrumentFailed, "failed", "0.5714285714"},
		{"no report", "rm out/report.xml; exit 0", "0.5", events.InstrumentFailed, "failed", "no score file out/report.xml"},
		{"cannot run", "factline-no-such-runner", "0.5", events.InstrumentErrored, "pending", "tests errored"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := "score-" + strings.ReplaceAll(c.name, " ", "-")
			e.attempt(run, e.publish(fmt.Sprintf(scoredGrading, c.tail, c.passAt)), files)
			must(t, g.Grade(e.ctx, suite, run))
			v := e.verdict(run)
			tests := result(v, "tests")
			if tests.Outcome != c.outcome || v.Result.Type() != c.verdict {
				t.Fatalf("tests %s (%s), verdict %s; want %s, %s", tests.Outcome, tests.Detail, v.Result.Type(), c.outcome, c.verdict)
			}
			if len(v.Scores) != 3 {
				t.Fatalf("scores %+v", v.Scores)
			}
			got := v.Scores[0].Missing
			if v.Scores[0].Value != nil {
				got = fmt.Sprintf("%.10f", *v.Scores[0].Value)
			}
			if !strings.Contains(got, c.correctness) {
				t.Fatalf("correctness %q, want %q", got, c.correctness)
			}
			if c.correctness[0] == '0' {
				if s := tests.Score; s == nil || s.Tests == nil || s.Tests.Failed != 3 || s.Tests.Cases[0].Name != "TestNegative" {
					t.Fatalf("the result lists no test cases: %+v", s)
				}
			}
			if l := v.Scores[1]; l.Raw == nil || *l.Raw != 120 || *l.Value != 0.12 || !l.LowerIsBetter {
				t.Fatalf("latency %+v", l)
			}
			if s := v.Scores[2]; s.Value == nil || *s.Value != 1 {
				t.Fatalf("in_scope %+v", s)
			}
		})
	}
}

// Must show: a judge with a scale rates the candidate on it, its reasons
// kept in the result; its scorer maps the rating onto [0, 1]; a scorer
// that decides the judge sets its outcome from the rating, not from its
// verdict line; a judge that gives no rating has a score that says why.
func TestJudgeScoresOnItsDeclaredScale(t *testing.T) {
	e := start(t)
	judge := func(id, model, reply string) string {
		return fmt.Sprintf("    - {id: %s, kind: judge, model: {provider: scripted, name: %s}, rubric: answer is 4 and explained, scale: [1, 5], script: %q}\n",
			id, model, "turns:\n  - text: "+fmt.Sprintf("%q", reply)+"\n")
	}
	req := e.publish("grading:\n  instruments:\n" +
		judge("rate", "judge-a", "Right, but NOTES.md is terse.\nSCORE: 4\nVERDICT: PASS") +
		judge("strict", "judge-b", "Acceptable.\nSCORE: 3\nVERDICT: PASS") +
		judge("mute", "judge-c", "Fine.\nVERDICT: PASS") +
		"  scorers:\n" +
		"    - {id: quality, instrument: rate}\n" +
		"    - {id: strictness, instrument: strict, decides: true, pass_at: 4}\n" +
		"    - {id: silence, instrument: mute}\n")
	e.attempt("rated", req, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, e.grader().Grade(e.ctx, suite, "rated"))
	v := e.verdict("rated")
	rate := result(v, "rate")
	if rate.Outcome != events.InstrumentPassed || rate.Score == nil || rate.Score.Reasons != "Right, but NOTES.md is terse." {
		t.Fatalf("rate: %+v", rate)
	}
	if q := v.Scores[0]; q.Raw == nil || *q.Raw != 4 || *q.Value != 0.75 || q.Min != 1 || q.Max != 5 {
		t.Fatalf("quality %+v", q)
	}
	strict := result(v, "strict")
	if strict.Outcome != events.InstrumentFailed || !strings.Contains(strict.Detail, "scorer strictness decides") {
		t.Fatalf("strict: %s (%s), want failed by its scorer (3 < 4) although it said PASS", strict.Outcome, strict.Detail)
	}
	if s := v.Scores[2]; s.Value != nil || !strings.Contains(s.Missing, "no SCORE line") {
		t.Fatalf("silence %+v", s)
	}
	// The judges are advisory and not binding: the verdict rules are as
	// ever, the scores beside them.
	if v.Result.Type() != "passed" || len(v.Vetoes) != 1 || v.Vetoes[0].Instrument != "strict" || v.Vetoes[0].Binding {
		t.Fatalf("verdict %s, vetoes %+v", v.Result.Type(), v.Vetoes)
	}
}

// Must show: a judge that dresses its verdict and rating lines in markdown
// (**VERDICT: PASS**, a list marker) is read, not taken to have abstained.
func TestAJudgeThatBoldsItsVerdictIsRead(t *testing.T) {
	e := start(t)
	judge := func(id, model, reply string) string {
		return fmt.Sprintf("    - {id: %s, kind: judge, model: {provider: scripted, name: %s}, rubric: answer is 4, scale: [1, 5], script: %q}\n",
			id, model, "turns:\n  - text: "+fmt.Sprintf("%q", reply)+"\n")
	}
	req := e.publish("grading:\n  instruments:\n" +
		judge("bold", "judge-a", "Right.\n**SCORE: 4**\n**VERDICT: PASS**") +
		judge("listed", "judge-b", "Wrong.\n- __VERDICT: FAIL__") +
		"  scorers:\n    - {id: quality, instrument: bold}\n")
	e.attempt("dressed", req, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, e.grader().Grade(e.ctx, suite, "dressed"))
	v := e.verdict("dressed")
	if r := result(v, "bold"); r.Outcome != events.InstrumentPassed {
		t.Errorf("bold: %s (%s), want passed", r.Outcome, r.Detail)
	}
	if r := result(v, "listed"); r.Outcome != events.InstrumentFailed {
		t.Errorf("listed: %s (%s), want failed", r.Outcome, r.Detail)
	}
	if q := v.Scores[0]; q.Raw == nil || *q.Raw != 4 {
		t.Errorf("quality %+v, want the bold rating 4", q)
	}
}
