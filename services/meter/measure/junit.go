package measure

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
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

// WriteJUnit writes a suite's report as JUnit XML: one test case per
// planned attempt, named case/treatment/trial. A failed attempt is a
// failure whose message is its grade's first veto; a pending or excluded
// one (a harness error among them) is skipped, with its reason, and so is
// one abstained or not settled yet; an invalid or disputed one is an
// error: no grade stands for it (docs/report.md#junit).
func WriteJUnit(w io.Writer, r Report) error {
	s := junitSuite{Name: r.Suite}
	var total uint64
	for _, a := range r.Attempts {
		c := junitCase{Name: JUnitName(a), Classname: r.Suite + "." + a.Treatment, Time: "0"}
		if a.Millis != nil {
			total += *a.Millis
			c.Time = seconds(*a.Millis, "%.3f")
		}
		why := a.Reason
		if why == "" {
			why = string(a.Outcome)
		}
		switch a.Outcome {
		case OutcomePassed:
		case OutcomeFailed:
			m := &junitMessage{Message: "graded failed", Type: string(OutcomeFailed)}
			if v := a.FirstVeto; v != nil {
				m.Message = fmt.Sprintf("%s vetoes %s: %s", v.Instrument, v.Requirement, v.Reason)
			}
			m.Text = fmt.Sprintf("run %s ended %s (%s)", a.Run, a.Status, a.EndReason)
			c.Failure = m
			s.Failures++
		case OutcomeInvalid, OutcomeDisputed:
			c.Error = &junitMessage{Message: why, Type: string(a.Outcome), Text: "run " + a.Run}
			s.Errors++
		default: // pending, excluded, abstained, awaiting
			c.Skipped = &junitMessage{Message: string(a.Outcome) + ": " + why, Type: string(a.Outcome)}
			s.Skipped++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	s.Time = seconds(total, "%.3f")
	doc := junitSuites{Name: r.Suite, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
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
