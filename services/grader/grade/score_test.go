package grade

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

func ptr[T any](v T) *T { return &v }

func (l *logb) scored(id events.InstrumentID, o events.InstrumentOutcome, s *events.InstrumentScore) *logb {
	return l.add(events.GradeInstrument{SnapshotDigest: snap, Result: events.InstrumentResult{
		Instrument: id, Version: "1", Outcome: o, Detail: string(o), Score: s}})
}

func lineScore(values ...events.ScoreValue) *events.InstrumentScore {
	return &events.InstrumentScore{Source: events.ScoreJSONLine, Values: values}
}

// Rule: a JUnit report from a real test runner (gotestsum, see
// testdata/junit/README.md) scores as its pass fraction, passed tests over
// those that ran, with every test case listed, failures first.
func TestJUnitReportScoresAsItsPassFraction(t *testing.T) {
	data, err := os.ReadFile("testdata/junit/gotestsum.xml")
	if err != nil {
		t.Fatal(err)
	}
	s := ReadJUnit(data)
	if err := events.ValidateBody(events.GradeInstrument{SnapshotDigest: snap, Result: events.InstrumentResult{
		Instrument: "tests", Version: "1", Outcome: events.InstrumentFailed, Score: &s}}); err != nil {
		t.Fatalf("the score is not a valid fact: %v", err)
	}
	if v, ok := s.Value("score"); !ok || v != 4.0/7 {
		t.Fatalf("score %v (%v), want 4/7; %+v", v, ok, s)
	}
	tt := s.Tests
	if tt == nil || tt.Passed != 4 || tt.Failed != 3 || tt.Errored != 0 || tt.Skipped != 1 || tt.Unlisted != 0 || len(tt.Cases) != 8 {
		t.Fatalf("tally %+v", tt)
	}
	var names []string
	for _, c := range tt.Cases {
		names = append(names, c.Name+":"+string(c.Outcome))
	}
	want := []string{"TestNegative:failed", "TestTable/mixed:failed", "TestTable:failed", "TestLarge:skipped",
		"TestEmpty:passed", "TestOne:passed", "TestMany:passed", "TestTable/positive:passed"}
	if !slices.Equal(names, want) {
		t.Fatalf("cases %v, want %v", names, want)
	}
	if tt.Cases[0].Suite != "example.com/sum" || tt.Cases[0].Message != "Failed" || !strings.Contains(tt.Cases[3].Message, "large inputs") {
		t.Fatalf("a case's suite or message: %+v, %+v", tt.Cases[0], tt.Cases[3])
	}
}

// Rule: errors count against the fraction like failures; skipped tests
// count neither way; nested suites are read.
func TestJUnitErrorsFailAndSkipsDoNotCount(t *testing.T) {
	s := ReadJUnit([]byte(`<testsuites><testsuites><testsuite name="a">
<testcase classname="a" name="ok"/><testcase classname="a" name="boom"><error message="panic">stack</error></testcase>
<testcase classname="a" name="later"><skipped/></testcase></testsuite></testsuites>
<testsuite name="b"><testcase name="fine"></testcase></testsuite></testsuites>`))
	if v, _ := s.Value("score"); v != 2.0/3 || s.Tests.Errored != 1 || s.Tests.Skipped != 1 || s.Tests.Cases[0].Message != "panic" {
		t.Fatalf("score %v, %+v", v, s.Tests)
	}
}

// Rule: a report that does not parse, is not JUnit, or ran no test yields
// no value and says why; it is never a score of 0.
func TestJUnitReportWithoutTestsYieldsNoValue(t *testing.T) {
	for name, data := range map[string]string{
		"empty":         "",
		"not xml":       "PASS\nok example.com/sum 0.1s\n",
		"other root":    `<html><body/></html>`,
		"cut short":     `<testsuites><testsuite><testcase name="a">`,
		"only skipped":  `<testsuite><testcase name="a"><skipped/></testcase></testsuite>`,
		"no test cases": `<testsuites tests="3"></testsuites>`,
	} {
		t.Run(name, func(t *testing.T) {
			s := ReadJUnit([]byte(data))
			if len(s.Values) != 0 || s.Missing == "" {
				t.Fatalf("got %+v, want no value and a reason", s)
			}
			if err := events.ValidateBody(events.GradeInstrument{SnapshotDigest: snap, Result: events.InstrumentResult{
				Instrument: "tests", Version: "1", Outcome: events.InstrumentFailed, Score: &s}}); err != nil {
				t.Fatalf("not a valid fact: %v", err)
			}
		})
	}
}

// Rule: a result lists the first ListedTests test cases and counts the
// rest, so a large suite keeps the fact small.
func TestJUnitListsTheFirstCasesAndCountsTheRest(t *testing.T) {
	var b strings.Builder
	b.WriteString("<testsuite>")
	for i := range 120 {
		if i%40 == 0 {
			fmt.Fprintf(&b, `<testcase name="T%d"><failure message="x"/></testcase>`, i)
		} else {
			fmt.Fprintf(&b, `<testcase name="T%d"/>`, i)
		}
	}
	b.WriteString("</testsuite>")
	s := ReadJUnit([]byte(b.String()))
	if len(s.Tests.Cases) != ListedTests || s.Tests.Unlisted != 120-ListedTests || s.Tests.Failed != 3 {
		t.Fatalf("listed %d, unlisted %d, failed %d", len(s.Tests.Cases), s.Tests.Unlisted, s.Tests.Failed)
	}
	for i, c := range s.Tests.Cases[:3] {
		if c.Outcome != events.TestFailed {
			t.Fatalf("case %d is %s: failures come first", i, c.Outcome)
		}
	}
	if v, _ := s.Value("score"); v != 117.0/120 {
		t.Fatalf("score %v", v)
	}
}

// Rule: a command's score is the last line of its output that is a JSON
// object with a "score" member; its other finite numbers are values too,
// in name order.
func TestScoreLineIsTheLastJSONObjectWithAScore(t *testing.T) {
	out := "running\n{\"score\": 0.1}\n{\"p50_ms\": 12}\n  {\"score\": 0.94, \"p50_ms\": 120, \"name\": \"x\", \"ok\": true, \"bad\": 1e999}  \nDONE\n{\"p99_ms\": 1e999}\n"
	s := ReadScoreLine([]byte(out))
	want := []events.ScoreValue{{Name: "p50_ms", Value: 120}, {Name: "score", Value: 0.94}}
	if !slices.Equal(s.Values, want) || s.Missing != "" {
		t.Fatalf("got %+v, want %v", s, want)
	}
}

// Rule: output without a score line yields no value and says so.
func TestOutputWithoutAScoreLineYieldsNoValue(t *testing.T) {
	for _, out := range []string{"", "PASS\n", "{\"Score\": 1}\n", "[{\"score\": 1}]\n", "{\"score\": 1\n"} {
		s := ReadScoreLine([]byte(out))
		if len(s.Values) != 0 || !strings.Contains(s.Missing, "no score line") {
			t.Errorf("%q: got %+v", out, s)
		}
	}
}

// Rule: the deciding scorer passes its instrument when the value reaches
// the threshold in the scorer's direction, and fails it otherwise,
// including when there is no value.
func TestDecidingScorerPassesAtItsThreshold(t *testing.T) {
	hi := Scorer{ID: "correctness", Instrument: "tests", Key: "score", Min: 0, Max: 1, PassAt: ptr(0.9)}
	lo := Scorer{ID: "errors", Instrument: "tests", Key: "errors", Min: 0, Max: 10, LowerIsBetter: true, PassAt: ptr(2.0)}
	for _, c := range []struct {
		name  string
		s     Scorer
		score *events.InstrumentScore
		want  events.InstrumentOutcome
	}{
		{"47 of 50 reaches 0.9", hi, lineScore(events.ScoreValue{Name: "score", Value: 0.94}), events.InstrumentPassed},
		{"exactly at the threshold", hi, lineScore(events.ScoreValue{Name: "score", Value: 0.9}), events.InstrumentPassed},
		{"below", hi, lineScore(events.ScoreValue{Name: "score", Value: 0.89}), events.InstrumentFailed},
		{"lower is better, under", lo, lineScore(events.ScoreValue{Name: "errors", Value: 1}, events.ScoreValue{Name: "score", Value: 0}), events.InstrumentPassed},
		{"lower is better, over", lo, lineScore(events.ScoreValue{Name: "errors", Value: 3}, events.ScoreValue{Name: "score", Value: 1}), events.InstrumentFailed},
		{"no score recorded", hi, nil, events.InstrumentFailed},
		{"no score line", hi, &events.InstrumentScore{Source: events.ScoreJSONLine, Missing: "no score line"}, events.InstrumentFailed},
		{"off the scale", hi, lineScore(events.ScoreValue{Name: "score", Value: 1.5}), events.InstrumentFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, detail := DecideByScore(c.s, c.score)
			if got != c.want || !strings.Contains(detail, c.s.ID) {
				t.Fatalf("%s (%s), want %s", got, detail, c.want)
			}
		})
	}
}

// Rule: a score is its raw value mapped onto [0, 1] by its scale, never
// flipped by its direction; a file or scope check, and any instrument
// scored by its outcome, scores 1 passed and 0 failed.
func TestScoresMapRawValuesOntoTheirScale(t *testing.T) {
	scorers := []Scorer{
		{ID: "quality", Instrument: "review", Key: "score", Min: 1, Max: 5},
		{ID: "latency", Instrument: "bench", Key: "p50_ms", Min: 0, Max: 1000, LowerIsBetter: true},
		{ID: "in_scope", Instrument: "scope", Min: 0, Max: 1},
		{ID: "answer", Instrument: "answer", Min: 0, Max: 1},
	}
	ins := []events.InstrumentResult{
		{Instrument: "review", Outcome: events.InstrumentPassed, Score: &events.InstrumentScore{Source: events.ScoreJudge, Values: []events.ScoreValue{{Name: "score", Value: 4}}}},
		{Instrument: "bench", Outcome: events.InstrumentPassed, Score: lineScore(events.ScoreValue{Name: "p50_ms", Value: 250}, events.ScoreValue{Name: "score", Value: 1})},
		{Instrument: "scope", Outcome: events.InstrumentPassed},
		{Instrument: "answer", Outcome: events.InstrumentFailed},
	}
	got := Scores(scorers, ins)
	for i, w := range []struct{ raw, value float64 }{{4, 0.75}, {250, 0.25}, {1, 1}, {0, 0}} {
		s := got[i]
		if s.Raw == nil || *s.Raw != w.raw || *s.Value != w.value || s.Missing != "" {
			t.Errorf("%s: raw %v value %v (%q), want %v → %v", s.Scorer, s.Raw, s.Value, s.Missing, w.raw, w.value)
		}
	}
	if Scores(nil, ins) != nil {
		t.Error("no scorers, no scores")
	}
}

// Rule: a scorer without a value says why, and a value outside the scale
// is missing, never clipped into it.
func TestScoreWithoutAValueSaysWhy(t *testing.T) {
	ins := []events.InstrumentResult{
		{Instrument: "tests", Outcome: events.InstrumentErrored, Detail: "exit 127"},
		{Instrument: "scope", Outcome: events.InstrumentNotRun},
		{Instrument: "bench", Outcome: events.InstrumentPassed, Score: lineScore(events.ScoreValue{Name: "score", Value: 7})},
		{Instrument: "review", Outcome: events.InstrumentAbstained, Score: &events.InstrumentScore{Source: events.ScoreJudge, Missing: "no SCORE line"}},
		{Instrument: "plain", Outcome: events.InstrumentPassed},
	}
	for _, c := range []struct {
		s    Scorer
		want string
	}{
		{Scorer{ID: "a", Instrument: "tests", Key: "score", Max: 1}, "tests errored"},
		{Scorer{ID: "b", Instrument: "scope", Max: 1}, "scope not_run"},
		{Scorer{ID: "c", Instrument: "bench", Key: "score", Max: 1}, "outside the scale"},
		{Scorer{ID: "d", Instrument: "bench", Key: "p50_ms", Max: 1}, `no value "p50_ms"`},
		{Scorer{ID: "e", Instrument: "review", Key: "score", Min: 1, Max: 5}, "no SCORE line"},
		{Scorer{ID: "f", Instrument: "plain", Key: "score", Max: 1}, "recorded no score"},
		{Scorer{ID: "g", Instrument: "gone", Max: 1}, "gone has no result"},
	} {
		got := Scores([]Scorer{c.s}, ins)[0]
		if got.Value != nil || !strings.Contains(got.Missing, c.want) {
			t.Errorf("%s: %+v, want missing saying %q", c.s.ID, got, c.want)
		}
	}
}

// Rule: scores stand beside the verdict and never change it: the same
// results give the same verdict with or without scorers, and the verdict
// lists every scorer in the case's order.
func TestScoresNeverChangeTheVerdict(t *testing.T) {
	bad := lineScore(events.ScoreValue{Name: "score", Value: 0.02})
	scorers := []Scorer{{ID: "correctness", Instrument: "tests", Key: "score", Max: 1}, {ID: "in_scope", Instrument: "scope", Max: 1}}
	for _, o := range []events.InstrumentOutcome{events.InstrumentPassed, events.InstrumentFailed, events.InstrumentErrored} {
		t.Run(string(o), func(t *testing.T) {
			plain := newLog(t).sealed().scored("tests", o, bad).result("scope", "1", events.InstrumentPassed).
				decide(policy(false, req("tests"), req("scope")))
			p := policy(false, req("tests"), req("scope"))
			p.Scorers = scorers
			d := newLog(t).sealed().scored("tests", o, bad).result("scope", "1", events.InstrumentPassed).decide(p)
			valid(t, d)
			if d.Verdict.Result.Type() != plain.Verdict.Result.Type() || len(d.Verdict.Vetoes) != len(plain.Verdict.Vetoes) {
				t.Fatalf("with scorers %s, without %s", d.Verdict.Result.Type(), plain.Verdict.Result.Type())
			}
			if len(d.Verdict.Scores) != 2 || d.Verdict.Scores[0].Scorer != "correctness" || d.Verdict.Scores[1].Scorer != "in_scope" {
				t.Fatalf("scores %+v", d.Verdict.Scores)
			}
			if plain.Verdict.Scores != nil {
				t.Fatalf("a plan without scorers scored: %+v", plain.Verdict.Scores)
			}
		})
	}
}

// Rule: the scorers are part of the plan: grading again under changed
// scorers appends a new revision; under the same ones, nothing.
func TestChangedScorersGradeAgain(t *testing.T) {
	p := policy(false, req("tests"))
	l := newLog(t).sealed().scored("tests", events.InstrumentPassed, lineScore(events.ScoreValue{Name: "score", Value: 0.5}))
	if d := l.decide(p); d.Verdict == nil || d.Verdict.Revision != 1 {
		t.Fatalf("first grade: %+v", d)
	}
	p.Scorers = []Scorer{{ID: "correctness", Instrument: "tests", Key: "score", Max: 1}}
	d := l.decide(p)
	valid(t, d)
	if d.Verdict == nil || d.Verdict.Revision != 2 || *d.Verdict.Scores[0].Value != 0.5 {
		t.Fatalf("new scorers: %+v", d.Verdict)
	}
	if d := l.decide(p); d.Verdict != nil {
		t.Fatalf("the same scorers graded again: revision %d", d.Verdict.Revision)
	}
	p.Scorers[0].Max = 2
	if d := l.decide(p); d.Verdict == nil || d.Verdict.Revision != 3 || *d.Verdict.Scores[0].Value != 0.25 {
		t.Fatalf("a changed scale: %+v", d.Verdict)
	}
}

// Rule: a judge's rating is its last "SCORE: n" line on its declared
// scale, with its reasons kept; no rating, or one off the scale, is no
// value, with why.
func TestJudgeRatingIsItsLastScoreLineOnItsScale(t *testing.T) {
	reply := "The fix is correct.\nSCORE: 2\nOn reflection NOTES.md skips the edge case.\nSCORE: 4/5\nVERDICT: PASS\n"
	s := ReadJudgeScore(reply, 1, 5)
	if v, ok := s.Value("score"); !ok || v != 4 || s.Missing != "" {
		t.Fatalf("got %+v, want 4", s)
	}
	if s.Reasons != "The fix is correct.\n\nOn reflection NOTES.md skips the edge case." {
		t.Fatalf("reasons %q", s.Reasons)
	}
	for reply, why := range map[string]string{
		"Looks fine.\nVERDICT: PASS": "no SCORE line",
		"SCORE: 7\nVERDICT: PASS":    "outside the scale",
		"SCORE: 0.5\nVERDICT: FAIL":  "outside the scale",
		"I'd say SCORE: 4 overall":   "no SCORE line",
		"SCORE: four\nVERDICT: PASS": "no rating the grader reads",
	} {
		s := ReadJudgeScore(reply, 1, 5)
		if len(s.Values) != 0 || !strings.Contains(s.Missing, why) {
			t.Errorf("%q: %+v, want missing saying %q", reply, s, why)
		}
		validScore(t, s)
	}
}

func (l *logb) scoredAt(id events.InstrumentID, version string, o events.InstrumentOutcome, score float64) *logb {
	return l.add(events.GradeInstrument{SnapshotDigest: snap, Result: events.InstrumentResult{
		Instrument: id, Version: version, Outcome: o, Detail: string(o), Score: lineScore(events.ScoreValue{Name: "score", Value: score})}})
}

// Rule: a score that disagrees between revisions is a dispute: the new
// revision comes with a grade.conflict naming the scorer, and the earlier
// revision keeps its score. A changed scale over the same measurement is
// no disagreement, and one instrument gets one conflict per revision.
func TestScoreThatDisagreesBetweenRevisionsIsAConflict(t *testing.T) {
	correctness := []Scorer{{ID: "correctness", Instrument: "tests", Key: "score", Max: 1}}
	v1 := policy(false, req("tests"))
	v1.Scorers = correctness
	l := newLog(t).sealed().ended().scoredAt("tests", "1", events.InstrumentPassed, 0.9)
	l.decide(v1)
	v2 := policy(false, Instrument{ID: "tests", Version: "2", Required: true, Binding: true, Requirement: "tests"})
	v2.Scorers = correctness
	l.scoredAt("tests", "2", events.InstrumentPassed, 0.6)
	d := l.decide(v2)
	valid(t, d)
	if len(d.Conflicts) != 1 || d.Conflicts[0].Instrument != "tests" || !strings.Contains(d.Conflicts[0].Reason, "correctness") ||
		!strings.Contains(d.Conflicts[0].Reason, "0.6") || !strings.Contains(d.Conflicts[0].Reason, "0.9") {
		t.Fatalf("conflicts %+v, want one naming the scorer and both values", d.Conflicts)
	}
	if first := Fold(l.facts).Verdicts[snap][0]; *first.Scores[0].Raw != 0.9 {
		t.Fatalf("revision 1's score was rewritten: %+v", first.Scores)
	}

	// The same measurement on another scale: no dispute.
	v3 := v2
	v3.Scorers = []Scorer{{ID: "correctness", Instrument: "tests", Key: "score", Max: 2}}
	if d := l.decide(v3); d.Verdict == nil || len(d.Conflicts) != 0 {
		t.Fatalf("a new scale: %+v", d)
	}

	// An outcome that flips and a score that moves on one instrument:
	// one conflict (its message ID names the instrument), both reasons.
	v4 := policy(false, Instrument{ID: "tests", Version: "3", Required: true, Binding: true, Requirement: "tests"})
	v4.Scorers = v3.Scorers
	l.scoredAt("tests", "3", events.InstrumentFailed, 0.1)
	d = l.decide(v4)
	if len(d.Conflicts) != 1 || !strings.Contains(d.Conflicts[0].Reason, "failed where") || !strings.Contains(d.Conflicts[0].Reason, "correctness") {
		t.Fatalf("conflicts %+v", d.Conflicts)
	}
}

// A score line whose "score" is there but no finite number (1e999 overflows
// a float, NaN is no JSON) says what it holds instead of claiming there is
// no such line, so whoever reads the missing score knows what to fix.
func TestAScoreThatIsNoFiniteNumberIsNamed(t *testing.T) {
	for _, c := range []struct{ out, says string }{
		{"{\"score\": 1e999}\n", `"score" is 1e999, not a finite number`},
		{"{\"score\": -1e400, \"p50_ms\": 3}\n", `"score" is -1e400, not a finite number`},
		{"{\"score\": \"0.9\"}\n", `"score" is "0.9", not a finite number`},
		{"{\"score\": null}\nPASS\n", `"score" is null, not a finite number`},
	} {
		s := ReadScoreLine([]byte(c.out))
		if len(s.Values) != 0 || !strings.Contains(s.Missing, c.says) || !strings.Contains(s.Missing, "last score line") {
			t.Errorf("%q: got %+v, want no value and a reason saying %q", c.out, s, c.says)
		}
	}
	// A good line after a bad one is the score: only the last counts.
	if s := ReadScoreLine([]byte("{\"score\": 1e999}\n{\"score\": 0.5}\n")); len(s.Values) != 1 || s.Missing != "" {
		t.Errorf("a finite score after an infinite one: %+v", s)
	}
}

// Rule: a rating written as a fraction counts only out of the scale's
// maximum. "SCORE: 4/10" on a 1–5 scale rates 0.4 of the way, not 4 of 5:
// taking the numerator would score it 0.75, so it is missing and says why.
func TestJudgeRatingOutOfAnotherMaximumIsNotOnItsScale(t *testing.T) {
	for reply, want := range map[string]float64{
		"SCORE: 4/5\nVERDICT: PASS":     4,
		"SCORE: 4 / 5.0\nVERDICT: PASS": 4,
		"SCORE: 3\nVERDICT: PASS":       3,
	} {
		s := ReadJudgeScore(reply, 1, 5)
		if v, ok := s.Value("score"); !ok || v != want {
			t.Errorf("%q: %v %v, want %v", reply, v, ok, want)
		}
	}
	for _, reply := range []string{"SCORE: 4/10\nVERDICT: PASS", "SCORE: 2/3\nVERDICT: FAIL", "SCORE: 1/1\nVERDICT: PASS"} {
		s := ReadJudgeScore(reply, 1, 5)
		if len(s.Values) != 0 || !strings.Contains(s.Missing, "out of") || !strings.Contains(s.Missing, "[1, 5]") {
			t.Errorf("%q: %+v, want missing saying the rating is out of another maximum than the scale [1, 5]'s", reply, s)
		}
		validScore(t, s)
	}
}

// Rule: an instrument that abstained measured nothing: a scorer of it is
// missing, saying so, even when the judge wrote a rating beside a reply
// that had no verdict line (docs/grading.md#scores: "missing with why (its
// instrument did not run, abstained, …)").
func TestScorerOfAnAbstainedInstrumentIsMissing(t *testing.T) {
	rated := &events.InstrumentScore{Source: events.ScoreJudge, Values: []events.ScoreValue{{Name: "score", Value: 4}}}
	ins := []events.InstrumentResult{{Instrument: "review", Outcome: events.InstrumentAbstained,
		Detail: "the judge gave no VERDICT line: **VERDICT: PASS**\nSCORE: 4", Score: rated}}
	for _, s := range []Scorer{
		{ID: "quality", Instrument: "review", Key: "score", Min: 1, Max: 5},
		{ID: "agreed", Instrument: "review", Min: 0, Max: 1},
	} {
		got := Scores([]Scorer{s}, ins)[0]
		if got.Value != nil || got.Raw != nil || !strings.Contains(got.Missing, "review abstained") {
			t.Errorf("%s: %+v, want missing saying review abstained", s.ID, got)
		}
	}
}

// Rule: a judge that wrote a SCORE line the grader cannot read is told
// apart from one that wrote none: the reason quotes the line, so a rubric
// asking for "40%" or "four" is found from the grade, not guessed at.
func TestAnUnreadableScoreLineIsNamedNotCalledMissing(t *testing.T) {
	for reply, quoted := range map[string]string{
		"SCORE: 40%\nVERDICT: PASS":           "40%",
		"SCORE: four\nVERDICT: PASS":          "four",
		"Fine.\nScore: 4 of 5\nVERDICT: PASS": "4 of 5",
	} {
		s := ReadJudgeScore(reply, 1, 5)
		if len(s.Values) != 0 || strings.Contains(s.Missing, "no SCORE line") || !strings.Contains(s.Missing, quoted) {
			t.Errorf("%q: %+v, want missing quoting %q, not saying there was no SCORE line", reply, s, quoted)
		}
		validScore(t, s)
	}
	if s := ReadJudgeScore("Looks fine.\nVERDICT: PASS", 1, 5); !strings.Contains(s.Missing, "no SCORE line") {
		t.Errorf("a reply without a SCORE line: %+v", s)
	}
}

// Rule: the last score line is the answer. When its "score" is no finite
// number the scorer is missing with a reason quoting it; an earlier line's
// score is never taken in its place.
func TestAnUnreadableLastScoreLineIsTheAnswer(t *testing.T) {
	for out, quoted := range map[string]string{
		"{\"score\": 0.5}\n{\"score\": 1e400}\n":          "1e400",
		"{\"score\": 0.5}\n{\"score\": \"high\"}\nDONE\n": `"high"`,
		"{\"score\": 0.5}\n{\"score\": null, \"n\": 2}\n": "null",
	} {
		s := ReadScoreLine([]byte(out))
		if len(s.Values) != 0 || !strings.Contains(s.Missing, quoted) || strings.Contains(s.Missing, "no score line") {
			t.Errorf("%q: got %+v, want no value and a reason quoting %s", out, s, quoted)
		}
	}
}

// Rule: a judge's verdict is its last line VERDICT: PASS or VERDICT: FAIL,
// read also when the judge dressed the line in markdown: wrapped in **…**
// or __…__, after a heading or list marker, with spaces around. A verdict
// inside a sentence stays unread.
func TestJudgeVerdictLineMayBeWrappedInMarkdown(t *testing.T) {
	for reply, want := range map[string]events.InstrumentOutcome{
		"Good work.\nVERDICT: PASS":                            events.InstrumentPassed,
		"Good work.\n**VERDICT: PASS**":                        events.InstrumentPassed,
		"Broken.\n  __VERDICT: FAIL__  \n":                     events.InstrumentFailed,
		"## VERDICT: FAIL":                                     events.InstrumentFailed,
		"# **VERDICT: PASS**":                                  events.InstrumentPassed,
		"- VERDICT: PASS":                                      events.InstrumentPassed,
		"* **verdict: fail**":                                  events.InstrumentFailed,
		"**VERDICT: FAIL**\nOn reflection:\n**VERDICT: PASS**": events.InstrumentPassed,
		"Fine.\n**VERDICT:** PASS":                             events.InstrumentPassed,
		"- __Verdict__: fail":                                  events.InstrumentFailed,
	} {
		got, ok := ReadJudgeVerdict(reply)
		if !ok || got != want {
			t.Errorf("%q: %v %v, want %v", reply, got, ok, want)
		}
	}
	for _, reply := range []string{
		"I would say VERDICT: PASS overall.",
		"The verdict is **VERDICT: PASS** here.",
		"**VERDICT: PASS",
		"> VERDICT: PASS",
		"-VERDICT: PASS",
		"**VERDICT:* PASS",
		"**VERDICT__: PASS",
		"**VERDICT:**: PASS",
		"Looks fine.",
	} {
		if got, ok := ReadJudgeVerdict(reply); ok {
			t.Errorf("%q: read %v, want no verdict", reply, got)
		}
	}
}

// Rule: a judge's SCORE line is read in the same markdown dress as its
// verdict line, and the dressed lines stay out of its reasons.
func TestJudgeScoreLineMayBeWrappedInMarkdown(t *testing.T) {
	for _, c := range []struct {
		reply, reasons string
		want           float64
	}{
		{"Fine.\n**SCORE: 4**\n**VERDICT: PASS**", "Fine.", 4},
		{"Fine.\n- __SCORE: 3/5__\nVERDICT: PASS", "Fine.", 3},
		{"### SCORE: 2\nVERDICT: FAIL", "", 2},
		{"Fine.\n**SCORE:** 4/5\n**VERDICT:** PASS", "Fine.", 4},
	} {
		s := ReadJudgeScore(c.reply, 1, 5)
		if v, ok := s.Value("score"); !ok || v != c.want || s.Reasons != c.reasons {
			t.Errorf("%q: %+v, want %v with reasons %q", c.reply, s, c.want, c.reasons)
		}
	}
	if s := ReadJudgeScore("I'd give it **SCORE: 4** overall\nVERDICT: PASS", 1, 5); len(s.Values) != 0 {
		t.Errorf("a rating inside a sentence was read: %+v", s)
	}
}
