package events_test

import (
	"math"
	"testing"

	"github.com/factline/factline/events"
)

func scoredVerdict(scores ...events.Score) events.GradeVerdict {
	return events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "a", SnapshotID: digest("snapshot"), Revision: 1,
		Result: events.VerdictOK(), Scores: scores}}
}

// A score's value is its raw value mapped onto [0, 1]: a value outside,
// a raw value without its mapped value, a value that is not a finite
// number, an empty scale, or no value and no reason are refused where
// they are made, naming the field.
func TestAScoreIsAFiniteValueOnItsScaleOrSaysWhyNot(t *testing.T) {
	ok := events.Score{Scorer: "q", Instrument: "review", Key: "score", Min: 1, Max: 5, Raw: ptr(4.0), Value: ptr(0.75)}
	mustNewFact(t, scoredVerdict(ok))
	mustNewFact(t, scoredVerdict(events.Score{Scorer: "q", Instrument: "review", Min: 0, Max: 1, Missing: "review abstained"}))
	for _, c := range []struct {
		name  string
		edit  func(*events.Score)
		field string
		err   error
	}{
		{"value outside [0, 1]", func(s *events.Score) { s.Value = ptr(1.25) }, "body.verdict.scores[0].value", nil},
		{"raw without value", func(s *events.Score) { s.Value = nil }, "body.verdict.scores[0].value", nil},
		{"NaN raw", func(s *events.Score) { s.Raw = ptr(math.NaN()) }, "body.verdict.scores[0].raw", nil},
		{"infinite scale", func(s *events.Score) { s.Max = math.Inf(1) }, "body.verdict.scores[0].max", nil},
		{"empty scale", func(s *events.Score) { s.Min, s.Max = 5, 5 }, "body.verdict.scores[0].max", nil},
		{"no value and no reason", func(s *events.Score) { s.Raw, s.Value = nil, nil }, "body.verdict.scores[0].missing", events.ErrMissingField},
		{"a value and a reason", func(s *events.Score) { s.Missing = "none" }, "body.verdict.scores[0].missing", nil},
		{"no scorer", func(s *events.Score) { s.Scorer = "" }, "body.verdict.scores[0].scorer", events.ErrMissingField},
		{"NaN pass_at", func(s *events.Score) { s.PassAt = ptr(math.NaN()) }, "body.verdict.scores[0].pass_at", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			_, err := newFact(scoredVerdict(s))
			want := c.err
			if want == nil {
				want = events.ErrInvalidField
			}
			wantFieldError(t, err, want, events.KindGradeVerdict, c.field)
		})
	}
	_, err := newFact(scoredVerdict(ok, ok))
	wantFieldError(t, err, events.ErrInvalidField, events.KindGradeVerdict, "body.verdict.scores[1]")
}

// An instrument's score holds finite values in name order, or says why
// it has none; a JUnit tally lists or counts every test case it holds.
func TestAnInstrumentScoreHoldsFiniteNamedValuesOrSaysWhyNot(t *testing.T) {
	result := func(s events.InstrumentScore) events.GradeInstrument {
		return events.GradeInstrument{SnapshotDigest: digest("snapshot"), Result: events.InstrumentResult{
			Instrument: "tests", Version: "1", Outcome: events.InstrumentPassed, Score: &s}}
	}
	mustNewFact(t, result(events.InstrumentScore{Source: events.ScoreJSONLine, Values: []events.ScoreValue{{"a", 1}, {"score", 0.5}}}))
	for _, c := range []struct {
		name  string
		score events.InstrumentScore
		field string
	}{
		{"unknown source", events.InstrumentScore{Source: "csv", Missing: "x"}, "body.result.score.source"},
		{"nothing and no reason", events.InstrumentScore{Source: events.ScoreJudge}, "body.result.score.missing"},
		{"values out of order", events.InstrumentScore{Source: events.ScoreJSONLine, Values: []events.ScoreValue{{"score", 1}, {"a", 1}}}, "body.result.score.values[1]"},
		{"a name twice", events.InstrumentScore{Source: events.ScoreJSONLine, Values: []events.ScoreValue{{"score", 1}, {"score", 1}}}, "body.result.score.values[1]"},
		{"infinite value", events.InstrumentScore{Source: events.ScoreJSONLine, Values: []events.ScoreValue{{"score", math.Inf(-1)}}}, "body.result.score.values[0].value"},
		{"tally that does not add up", events.InstrumentScore{Source: events.ScoreJUnit, Values: []events.ScoreValue{{"score", 1}},
			Tests: &events.TestTally{Passed: 2, Cases: []events.TestCase{{Name: "T", Outcome: events.TestPassed}}}}, "body.result.score.tests.cases"},
		{"unknown test outcome", events.InstrumentScore{Source: events.ScoreJUnit, Values: []events.ScoreValue{{"score", 1}},
			Tests: &events.TestTally{Passed: 1, Cases: []events.TestCase{{Name: "T", Outcome: "flaky"}}}}, "body.result.score.tests.cases[0].outcome"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := newFact(result(c.score))
			wantFieldError(t, err, events.ErrInvalidField, events.KindGradeInstrument, c.field)
		})
	}
}
