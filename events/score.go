package events

import "math"

// ScoreSource says where an instrument's measured values came from.
type ScoreSource string

// Score sources.
const (
	// ScoreJSONLine: the last line of a command's output (or of a file it
	// wrote) that is a JSON object with a numeric member "score".
	ScoreJSONLine ScoreSource = "json_line"
	// ScoreJUnit: a JUnit XML report the command wrote; the score is the
	// passed tests over the tests that ran (skipped ones left out).
	ScoreJUnit ScoreSource = "junit"
	// ScoreJudge: a judge's rating on its declared scale.
	ScoreJudge ScoreSource = "judge"
)

var scoreSources = []ScoreSource{ScoreJSONLine, ScoreJUnit, ScoreJudge}

// TestOutcome is what became of one test case of a JUnit report.
type TestOutcome string

// Test outcomes. A skipped test neither passed nor failed: it is left out
// of the pass fraction.
const (
	TestPassed  TestOutcome = "passed"
	TestFailed  TestOutcome = "failed"
	TestErrored TestOutcome = "errored"
	TestSkipped TestOutcome = "skipped"
)

var testOutcomes = []TestOutcome{TestPassed, TestFailed, TestErrored, TestSkipped}

// InstrumentScore is what an instrument measured beside its outcome: the
// numbers it read (a command's score line or JUnit report, a judge's
// rating), or why it could read none. A case's scorers read these values;
// the values themselves are raw, on the instrument's own scale.
type InstrumentScore struct {
	Source ScoreSource `msgpack:"source" json:"source"`
	// Values are the numbers read, by name ("score" is the main one), in
	// name order. Empty when Missing says why.
	Values []ScoreValue `msgpack:"values,omitempty" json:"values,omitempty"`
	// Missing says why no value could be read: no score line, a report
	// that does not parse, a judge without a SCORE line.
	Missing string `msgpack:"missing,omitempty" json:"missing,omitempty"`
	// Tests is a JUnit report's tally and its test cases.
	Tests *TestTally `msgpack:"tests,omitempty" json:"tests,omitempty"`
	// Reasons are a judge's reasons for its rating, as it wrote them.
	Reasons string `msgpack:"reasons,omitempty" json:"reasons,omitempty"`
}

// Value returns the value named name, if the score has one.
func (s *InstrumentScore) Value(name string) (float64, bool) {
	if s == nil {
		return 0, false
	}
	for _, v := range s.Values {
		if v.Name == name {
			return v.Value, true
		}
	}
	return 0, false
}

func (s InstrumentScore) validate(p string) error {
	if err := needOneOf(p, "source", s.Source, scoreSources); err != nil {
		return err
	}
	if len(s.Values) == 0 && s.Missing == "" {
		return invalid(join(p, "missing"), "required when no value was read")
	}
	if len(s.Values) > 0 && s.Missing != "" {
		return invalid(join(p, "missing"), "must be empty when values were read")
	}
	for i, v := range s.Values {
		if err := v.validate(at(join(p, "values"), i)); err != nil {
			return err
		}
		if i > 0 && s.Values[i-1].Name >= v.Name {
			return invalid(at(join(p, "values"), i), "values are in name order, each name once")
		}
	}
	if s.Tests != nil {
		return s.Tests.validate(join(p, "tests"))
	}
	return nil
}

// ScoreValue is one named number an instrument read.
type ScoreValue struct {
	Name  string  `msgpack:"name" json:"name"`
	Value float64 `msgpack:"value" json:"value"`
}

func (v ScoreValue) validate(p string) error {
	if err := needString(p, "name", v.Name); err != nil {
		return err
	}
	return needFinite(p, "value", v.Value)
}

// TestTally counts a JUnit report's test cases by outcome and lists them
// (the first ListedTests; Unlisted counts the rest, failures listed
// first).
type TestTally struct {
	Passed   uint32     `msgpack:"passed" json:"passed"`
	Failed   uint32     `msgpack:"failed" json:"failed"`
	Errored  uint32     `msgpack:"errored" json:"errored"`
	Skipped  uint32     `msgpack:"skipped" json:"skipped"`
	Cases    []TestCase `msgpack:"cases,omitempty" json:"cases,omitempty"`
	Unlisted uint32     `msgpack:"unlisted,omitempty" json:"unlisted,omitempty"`
}

// Ran is the number of tests that ran: every test but the skipped ones.
func (t TestTally) Ran() uint32 { return t.Passed + t.Failed + t.Errored }

func (t TestTally) validate(p string) error {
	if uint64(len(t.Cases))+uint64(t.Unlisted) != uint64(t.Passed)+uint64(t.Failed)+uint64(t.Errored)+uint64(t.Skipped) {
		return invalid(join(p, "cases"), "%d listed and %d unlisted test cases do not add up to the tally's %d",
			len(t.Cases), t.Unlisted, uint64(t.Passed)+uint64(t.Failed)+uint64(t.Errored)+uint64(t.Skipped))
	}
	return each(p, "cases", t.Cases)
}

// TestCase is one test case of a JUnit report.
type TestCase struct {
	// Suite is the test case's classname (a Go package, a Java class).
	Suite   string      `msgpack:"suite,omitempty" json:"suite,omitempty"`
	Name    string      `msgpack:"name" json:"name"`
	Outcome TestOutcome `msgpack:"outcome" json:"outcome"`
	// Message is the failure's, error's or skip's message, clipped.
	Message string `msgpack:"message,omitempty" json:"message,omitempty"`
}

func (c TestCase) validate(p string) error {
	if err := needString(p, "name", c.Name); err != nil {
		return err
	}
	return needOneOf(p, "outcome", c.Outcome, testOutcomes)
}

// Score is one scorer's score of an attempt, as a grade.verdict records
// it: the scorer's definition (which instrument value it reads, its scale,
// its direction, whether it decides the instrument's outcome) and the
// value it read, mapped onto [0, 1] by the scale; or why it has none.
type Score struct {
	Scorer     string       `msgpack:"scorer" json:"scorer"`
	Instrument InstrumentID `msgpack:"instrument" json:"instrument"`
	// Key names the value of the instrument's score the scorer reads;
	// empty when it reads the instrument's outcome (1 passed, 0 failed).
	Key string `msgpack:"key,omitempty" json:"key,omitempty"`
	// Min and Max are the scale of the raw value; Value is (Raw − Min) /
	// (Max − Min).
	Min float64 `msgpack:"min" json:"min"`
	Max float64 `msgpack:"max" json:"max"`
	// LowerIsBetter marks a scorer whose smaller values are better (a
	// cost, an error rate).
	LowerIsBetter bool `msgpack:"lower_is_better,omitempty" json:"lower_is_better,omitempty"`
	// PassAt, when set, makes this the deciding scorer: its instrument
	// passed when Raw ≥ PassAt (≤ when lower is better), failed otherwise.
	PassAt *float64 `msgpack:"pass_at,omitempty" json:"pass_at,omitempty"`
	Raw    *float64 `msgpack:"raw,omitempty" json:"raw,omitempty"`
	Value  *float64 `msgpack:"value,omitempty" json:"value,omitempty"`
	// Missing says why the scorer has no value (its instrument did not
	// run or did not decide, recorded no such value, or one outside the
	// scale).
	Missing string `msgpack:"missing,omitempty" json:"missing,omitempty"`
}

func (s Score) validate(p string) error {
	if err := needString(p, "scorer", s.Scorer); err != nil {
		return err
	}
	if err := needString(p, "instrument", s.Instrument); err != nil {
		return err
	}
	if err := needFinite(p, "min", s.Min); err != nil {
		return err
	}
	if err := needFinite(p, "max", s.Max); err != nil {
		return err
	}
	if !(s.Min < s.Max) {
		return invalid(join(p, "max"), "the scale [%v, %v] is empty: max must exceed min", s.Min, s.Max)
	}
	if s.PassAt != nil {
		if err := needFinite(p, "pass_at", *s.PassAt); err != nil {
			return err
		}
	}
	if (s.Raw == nil) != (s.Value == nil) {
		return invalid(join(p, "value"), "raw and value come together")
	}
	if s.Value == nil {
		return needString(p, "missing", s.Missing)
	}
	if s.Missing != "" {
		return invalid(join(p, "missing"), "must be empty when the score has a value")
	}
	if err := needFinite(p, "raw", *s.Raw); err != nil {
		return err
	}
	if v := *s.Value; !(v >= 0 && v <= 1) {
		return invalid(join(p, "value"), "%v is outside [0, 1]", v)
	}
	return nil
}

func needFinite(p, field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return invalid(join(p, field), "%v is not a finite number", v)
	}
	return nil
}
