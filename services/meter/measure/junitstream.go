package measure

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"github.com/factline/factline/events"
)

// A report's JUnit file is written a test case at a time, as its rows
// are read (a stored report's, which a run does not hold): the head's
// counts come first (JUnitCounts, from a pass over the rows before), then
// each case, indented as WriteJUnit's encoder indents an element two
// levels down, so that the bytes are WriteJUnit's (TestJUnitWriterWritesWriteJUnitsBytes).

// junitSuiteTail is how the encoding of a document without test cases
// ends: the cases go between the testsuite's tags.
var junitSuiteTail = []byte("></testsuite>\n</testsuites>")

// junitCaseStart names a test case's element as the testsuite's field
// of them does.
var junitCaseStart = xml.StartElement{Name: xml.Name{Local: "testcase"}}

// junitCasePrefix is what the encoder puts before each line of a test
// case: the case is an element of the testsuite in the testsuites.
const junitCasePrefix = "    "

// JUnitWriter writes a suite's JUnit file (WriteJUnit's bytes) one test
// case at a time, holding none of them: a report's rows need not be held
// to write it. Like bufio.Writer it keeps its first error, writes
// nothing after it, and Close returns it.
type JUnitWriter struct {
	w     *bufio.Writer
	enc   *xml.Encoder
	suite string
	veto  func(*AttemptRow) (*events.GradeVeto, error)
	// left is the cases the head counted that are not written yet.
	left int
	err  error
}

// NewJUnitWriter writes to w the head of the JUnit file of suite whose
// test cases counts counted, and returns the writer of its cases. veto
// returns a failed attempt's first veto (its counted grade's, nil when it
// has none: AttemptRow.FirstVeto), which a failure says: the rows of a
// stored report do not hold it, and its owner looks it up.
func NewJUnitWriter(w io.Writer, suite string, counts JUnitCounts, veto func(*AttemptRow) (*events.GradeVeto, error)) *JUnitWriter {
	j := &JUnitWriter{w: bufio.NewWriterSize(w, 64<<10), suite: suite, veto: veto, left: counts.tests}
	var head bytes.Buffer
	enc := xml.NewEncoder(&head)
	enc.Indent("", "  ")
	if err := enc.Encode(counts.document(suite)); err != nil {
		j.err = fmt.Errorf("junit: %w", err)
		return j
	}
	j.w.WriteString(xml.Header)
	if counts.tests == 0 {
		// No case: the encoder closes the testsuite on its own line.
		j.w.Write(head.Bytes())
		return j
	}
	if !bytes.HasSuffix(head.Bytes(), junitSuiteTail) {
		j.err = errors.New("junit: the document does not end in its test suite")
		return j
	}
	j.w.Write(head.Bytes()[:head.Len()-len(junitSuiteTail)+1])
	j.w.WriteByte('\n')
	j.enc = xml.NewEncoder(j.w)
	j.enc.Indent(junitCasePrefix, "  ")
	return j
}

// Case writes the next attempt's test case, asking veto for a failed
// one's first veto.
func (j *JUnitWriter) Case(a *AttemptRow) error {
	if j.err != nil {
		return j.err
	}
	if j.left == 0 {
		j.err = fmt.Errorf("junit: attempt %s: more test cases than the head of %s counted", a.Run, j.suite)
		return j.err
	}
	var veto *events.GradeVeto
	if junitClassOf(a.Outcome) == junitFailure {
		v, err := j.veto(a)
		if err != nil {
			j.err = fmt.Errorf("junit: the first veto of %s: %w", a.Run, err)
			return j.err
		}
		veto = v
	}
	if err := j.enc.EncodeElement(junitCaseOf(j.suite, a, veto), junitCaseStart); err != nil {
		j.err = fmt.Errorf("junit: attempt %s: %w", a.Run, err)
		return j.err
	}
	j.left--
	return nil
}

// Close ends the document, which must have every case its head counted,
// and flushes it.
func (j *JUnitWriter) Close() error {
	if j.err != nil {
		return j.err
	}
	if j.left > 0 {
		return fmt.Errorf("junit: %d test cases of %s counted and not written", j.left, j.suite)
	}
	if j.enc != nil {
		j.w.WriteString("\n  </testsuite>\n</testsuites>")
	}
	j.w.WriteByte('\n')
	// bufio keeps the first write error and returns it here.
	return j.w.Flush()
}
