package grade

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/factline/factline/events"
)

// Bounds of what a JUnit report adds to a result: the test cases listed
// (the rest are counted) and the bytes of each one's message.
const (
	ListedTests    = 50
	testMessageCap = 200
	maxTestDepth   = 32
)

// junitSuite is a <testsuite> or <testsuites> element: suites nest (some
// runners write <testsuites> in <testsuites>), test cases sit in suites.
type junitSuite struct {
	Suites []junitSuite `xml:"testsuite"`
	Nested []junitSuite `xml:"testsuites"`
	Cases  []junitCase  `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitMessage `xml:"failure"`
	Error     *junitMessage `xml:"error"`
	Skipped   *junitMessage `xml:"skipped"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// ReadJUnit scores a JUnit XML report: passed tests over the tests that
// ran (a skipped test did not run), with the tally and the test cases,
// failures first, the first ListedTests of them listed. A report that does
// not parse, or in which no test ran, yields no value and says why.
func ReadJUnit(data []byte) events.InstrumentScore {
	out := events.InstrumentScore{Source: events.ScoreJUnit}
	var root junitSuite
	if err := decodeJUnit(data, &root); err != nil {
		out.Missing = clipTo("the JUnit report does not parse: "+err.Error(), testMessageCap)
		return out
	}
	var all []events.TestCase
	var walk func(s junitSuite, depth int)
	walk = func(s junitSuite, depth int) {
		for _, c := range s.Cases {
			all = append(all, testCase(c))
		}
		if depth < maxTestDepth {
			for _, in := range s.Suites {
				walk(in, depth+1)
			}
			for _, in := range s.Nested {
				walk(in, depth+1)
			}
		}
	}
	walk(root, 0)
	t := &events.TestTally{}
	for _, c := range all {
		switch c.Outcome {
		case events.TestPassed:
			t.Passed++
		case events.TestFailed:
			t.Failed++
		case events.TestErrored:
			t.Errored++
		case events.TestSkipped:
			t.Skipped++
		}
	}
	// Failures first: they are what a reader of the grade looks for.
	slices.SortStableFunc(all, func(a, b events.TestCase) int { return rank(a.Outcome) - rank(b.Outcome) })
	n := min(len(all), ListedTests)
	t.Cases, t.Unlisted = all[:n:n], uint32(len(all)-n)
	out.Tests = t
	if t.Ran() == 0 {
		out.Missing = fmt.Sprintf("the JUnit report ran no test (%d listed, %d skipped)", len(all), t.Skipped)
		return out
	}
	out.Values = []events.ScoreValue{{Name: "score", Value: float64(t.Passed) / float64(t.Ran())}}
	return out
}

// decodeJUnit reads the report's root element, <testsuites> or
// <testsuite>; anything else is not a JUnit report.
func decodeJUnit(data []byte, root *junitSuite) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return errors.New("no <testsuites> or <testsuite> element")
		}
		if err != nil {
			return err
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch start.Name.Local {
		case "testsuites", "testsuite":
			return d.DecodeElement(root, &start)
		}
		return fmt.Errorf("the root element is <%s>, not <testsuites> or <testsuite>", start.Name.Local)
	}
}

func testCase(c junitCase) events.TestCase {
	tc := events.TestCase{Suite: clipTo(c.Classname, testMessageCap), Name: clipTo(c.Name, testMessageCap), Outcome: events.TestPassed}
	if tc.Name == "" {
		tc.Name = "(unnamed)"
	}
	var m *junitMessage
	switch {
	case c.Error != nil:
		tc.Outcome, m = events.TestErrored, c.Error
	case c.Failure != nil:
		tc.Outcome, m = events.TestFailed, c.Failure
	case c.Skipped != nil:
		tc.Outcome, m = events.TestSkipped, c.Skipped
	}
	if m != nil {
		msg := m.Message
		if msg == "" {
			msg = strings.TrimSpace(m.Text)
		}
		tc.Message = clipTo(msg, testMessageCap)
	}
	return tc
}

func rank(o events.TestOutcome) int {
	switch o {
	case events.TestFailed:
		return 0
	case events.TestErrored:
		return 1
	case events.TestSkipped:
		return 2
	}
	return 3
}

// clipTo keeps at most n bytes of s, cut at a rune boundary.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8Start(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	if len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
