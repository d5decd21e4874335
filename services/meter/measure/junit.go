package measure

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"

	"github.com/factline/factline/events"
)

// JUnit's elements, as every CI system reads them (the shape of the
// Jenkins xunit plugin's junit-10.xsd; testdata/junit-10.xsd).
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Time     string      `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Skipped   *junitMessage `xml:"skipped"`
		Error     *junitMessage `xml:"error"`
		Failure   *junitMessage `xml:"failure"`
	}
	junitMessage struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

// JUnitName is the test case name of an attempt: case/treatment/trial.
func JUnitName(r AttemptRow) string {
	return r.Case + "/" + r.Treatment + "/" + strconv.FormatUint(uint64(r.Trial), 10)
}

// junitClass is what a test case of an outcome is.
type junitClass int

const (
	junitPassed junitClass = iota
	junitFailure
	junitError
	junitSkipped
)

// junitClassOf says what an attempt is as a test case: a failed one a
// failure; an invalid or disputed one an error (no grade stands for it);
// a pending, excluded (a harness error among them), abstained or
// unsettled one skipped.
func junitClassOf(o Outcome) junitClass {
	switch o {
	case OutcomePassed:
		return junitPassed
	case OutcomeFailed:
		return junitFailure
	case OutcomeInvalid, OutcomeDisputed:
		return junitError
	}
	return junitSkipped
}

// JUnitCounts is what the head of a JUnit file says of its test cases,
// counted an attempt at a time (Add): a writer that streams the cases
// (JUnitWriter) needs it before the first.
type JUnitCounts struct {
	tests, failures, errors, skipped int
	millis                           uint64
}

// Add counts one attempt's test case.
func (c *JUnitCounts) Add(a *AttemptRow) {
	c.tests++
	if a.Millis != nil {
		c.millis += *a.Millis
	}
	switch junitClassOf(a.Outcome) {
	case junitFailure:
		c.failures++
	case junitError:
		c.errors++
	case junitSkipped:
		c.skipped++
	}
}

// document is the JUnit document of suite with these counts and no test
// case yet.
func (c JUnitCounts) document(suite string) junitSuites {
	t := seconds(c.millis, "%.3f")
	return junitSuites{Name: suite, Tests: c.tests, Failures: c.failures, Errors: c.errors, Time: t,
		Suites: []junitSuite{{Name: suite, Tests: c.tests, Failures: c.failures, Errors: c.errors, Skipped: c.skipped, Time: t}}}
}

// junitCaseOf is an attempt's test case; veto is its counted grade's
// first veto (nil: none), which a failure says.
func junitCaseOf(suite string, a *AttemptRow, veto *events.GradeVeto) junitCase {
	c := junitCase{Name: JUnitName(*a), Classname: suite + "." + a.Treatment, Time: "0"}
	if a.Millis != nil {
		c.Time = seconds(*a.Millis, "%.3f")
	}
	why := a.Reason
	if why == "" {
		why = string(a.Outcome)
	}
	switch junitClassOf(a.Outcome) {
	case junitFailure:
		m := &junitMessage{Message: "graded failed", Type: string(OutcomeFailed)}
		if veto != nil {
			m.Message = fmt.Sprintf("%s vetoes %s: %s", veto.Instrument, veto.Requirement, veto.Reason)
		}
		m.Text = fmt.Sprintf("run %s ended %s (%s)", a.Run, a.Status, a.EndReason)
		c.Failure = m
	case junitError:
		c.Error = &junitMessage{Message: why, Type: string(a.Outcome), Text: "run " + a.Run}
	case junitSkipped:
		c.Skipped = &junitMessage{Message: string(a.Outcome) + ": " + why, Type: string(a.Outcome)}
	}
	return c
}

// WriteJUnit writes a suite's report as JUnit XML: one test case per
// planned attempt, named case/treatment/trial. A failed attempt is a
// failure whose message is its grade's first veto; a pending or excluded
// one (a harness error among them) is skipped, with its reason, and so is
// one abstained or not settled yet; an invalid or disputed one is an
// error: no grade stands for it (docs/report.md#junit). It builds the
// whole document from r's rows; JUnitWriter writes the same bytes a row
// at a time.
func WriteJUnit(w io.Writer, r Report) error {
	var counts JUnitCounts
	cases := make([]junitCase, 0, len(r.Attempts))
	for i := range r.Attempts {
		a := &r.Attempts[i]
		counts.Add(a)
		cases = append(cases, junitCaseOf(r.Suite, a, a.FirstVeto))
	}
	doc := counts.document(r.Suite)
	doc.Suites[0].Cases = cases
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
