package measure

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// validateJUnit validates a JUnit document against the common JUnit XSD
// in testdata with libxml2's xmllint.
func validateJUnit(t *testing.T, doc []byte) error {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatal("xmllint is not installed: install Debian's libxml2-utils package (scripts/test-deps, which make test runs first, does)")
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit-10.xsd", path).CombinedOutput()
	if err != nil {
		return &xmllintError{string(out)}
	}
	return nil
}

type xmllintError struct{ out string }

func (e *xmllintError) Error() string { return "xmllint: " + e.out }

// The JUnit file has one test case per attempt, named case/treatment/trial:
// a failure says the grade's first veto, a pending or excluded attempt is
// skipped, and the document is one the common JUnit XSD accepts.
func TestJUnitValidatesAgainstTheJUnitSchema(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1", "c2"}, []string{"A", "B"}, 1))
	l.attempt("c1", "A", 1, events.RunDone, u64(10), pass)
	l.attempt("c2", "A", 1, events.RunErrored, u64(10), nil) // a harness error: excluded
	l.attempt("c1", "B", 1, events.RunDone, u64(10), vr(events.VerdictWaiting("tests")))
	m := l.member("c2", "B", 1)
	l.attempt("c2", "B", 1, events.RunDone, u64(10), nil)
	l.add(m.Run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: m.Run, SnapshotID: d(m.Run), Revision: 1,
		Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed}},
		Vetoes: []events.GradeVeto{
			{Instrument: "tests", Requirement: "req-sum", Reason: "sum(2, 2) returned 5 <not 4> & more", Binding: true},
			{Instrument: "lint", Requirement: "req-style", Reason: "long line"}},
		Result: events.VerdictFail()}}, events.OwnerGrader)
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, l.report()); err != nil {
		t.Fatal(err)
	}
	if err := validateJUnit(t, buf.Bytes()); err != nil {
		t.Fatalf("the JUnit file is not valid JUnit: %v\n%s", err, buf.String())
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Suites[0]
	if s.Tests != 4 || s.Failures != 1 || s.Skipped != 2 || s.Errors != 0 {
		t.Fatalf("tests %d failures %d skipped %d errors %d, want 4, 1, 2, 0", s.Tests, s.Failures, s.Skipped, s.Errors)
	}
	byName := map[string]junitCase{}
	for _, c := range s.Cases {
		byName[c.Name] = c
	}
	if c, ok := byName["c1/A/1"]; !ok || c.Failure != nil || c.Skipped != nil {
		t.Errorf("the passed attempt: %+v", c)
	}
	if c := byName["c2/B/1"]; c.Failure == nil || c.Failure.Message != "tests vetoes req-sum: sum(2, 2) returned 5 <not 4> & more" {
		t.Errorf("the failed attempt's failure: %+v, want its first veto", c.Failure)
	}
	if c := byName["c1/B/1"]; c.Skipped == nil || !strings.HasPrefix(c.Skipped.Message, "pending: ") {
		t.Errorf("the pending attempt: %+v, want skipped", c.Skipped)
	}
	if c := byName["c2/A/1"]; c.Skipped == nil || !strings.HasPrefix(c.Skipped.Message, "excluded: ") {
		t.Errorf("the harness error: %+v, want skipped as excluded", c.Skipped)
	}
}

// The schema check can fail: a test case without a name, or a failure
// before a skipped, is refused by the XSD.
func TestJUnitSchemaRefusesWhatIsNotJUnit(t *testing.T) {
	for name, doc := range map[string]string{
		"no name":         `<testsuites><testsuite name="s" tests="1"><testcase classname="c"/></testsuite></testsuites>`,
		"order":           `<testsuites><testsuite name="s" tests="1"><testcase name="x"><failure/><skipped/></testcase></testsuite></testsuites>`,
		"unknown element": `<testsuites><testsuite name="s" tests="1"><testcase name="x"><verdict/></testcase></testsuite></testsuites>`,
	} {
		if err := validateJUnit(t, []byte(doc)); err == nil {
			t.Errorf("%s: the schema accepted %s", name, doc)
		}
	}
}
