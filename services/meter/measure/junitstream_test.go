package measure

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// junitSuiteOfEveryKind is a suite whose attempts are every kind of test
// case: passed, failed with a veto (its reason full of XML's special
// characters) and without, failed on a later revision and on a second
// sealed candidate (whose first vetoes are not the counted grade's),
// invalid, disputed, a harness error, pending, abstained, awaiting its
// grade and never started.
func junitSuiteOfEveryKind(t *testing.T) *suiteLog {
	t.Helper()
	l := newSuite(t, submitted([]string{"c1", "c2", "c3"}, []string{"A", "B"}, 2))
	failing := []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentFailed}}
	graded := func(run string, snapshot events.Digest, revision uint32, vetoes ...events.GradeVeto) {
		l.add(run, events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: run, SnapshotID: snapshot, Revision: revision,
			Instruments: failing, Vetoes: vetoes, Result: events.VerdictFail()}}, events.OwnerGrader)
	}
	l.attempt("c1", "A", 1, events.RunDone, u64(10), pass)
	m := l.member("c1", "A", 2)
	l.attempt("c1", "A", 2, events.RunDone, u64(10), nil)
	graded(m.Run, d(m.Run), 1,
		events.GradeVeto{Instrument: "tests", Requirement: "req-sum", Reason: "sum(2, 2) returned 5 <not 4> & \"more\"\n'quoted'\t]]>", Binding: true},
		events.GradeVeto{Instrument: "lint", Requirement: "req-style", Reason: "long line"})
	l.attempt("c1", "B", 1, events.RunDone, u64(10), fail, failing...)
	l.attempt("c1", "B", 2, events.RunDone, u64(10), vr(events.VerdictNoAnswer("no <answer> & none")))
	l.attempt("c2", "A", 1, events.RunErrored, u64(10), nil)
	l.attempt("c2", "A", 2, events.RunDone, u64(10), vr(events.VerdictWaiting("tests")))
	l.attempt("c2", "B", 1, events.RunDone, u64(10), vr(events.VerdictAbstain("the judge & the rubric disagree")))
	l.attempt("c2", "B", 2, events.RunDone, u64(10), fail, failing...)
	l.regrade("c2", "B", 2, 2, events.VerdictFail(), events.GradeConflict{Revision: 2, ConflictsWith: 1, Instrument: "tests", Reason: "v2 <fails>"})
	m = l.member("c3", "A", 1)
	l.attempt("c3", "A", 1, events.RunDone, u64(10), nil)
	graded(m.Run, d(m.Run), 1, events.GradeVeto{Instrument: "tests", Requirement: "req-old", Reason: "the first revision's"})
	graded(m.Run, d(m.Run), 2, events.GradeVeto{Instrument: "tests", Requirement: "req-new", Reason: "the second revision's"})
	m = l.member("c3", "A", 2)
	l.attempt("c3", "A", 2, events.RunDone, u64(10), nil)
	graded(m.Run, d(m.Run), 1, events.GradeVeto{Instrument: "tests", Requirement: "req-first", Reason: "the first candidate's"})
	l.add(m.Run, events.CandidateSealed{SnapshotDigest: d("again")}, events.OwnerRunner)
	graded(m.Run, d("again"), 1, events.GradeVeto{Instrument: "tests", Requirement: "req-again", Reason: "the second candidate's"})
	l.attempt("c3", "B", 1, events.RunDone, u64(10), nil) // awaiting its grade
	// c3/B/2 never started.
	return l
}

// streamJUnit writes r's JUnit file as a run writes a stored report's:
// from its JSON, read twice (the counts, then the cases), each failed
// attempt's first veto looked up in facts.
func streamJUnit(t *testing.T, r Report, facts []events.Fact) []byte {
	t.Helper()
	data, err := EncodeJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	var counts JUnitCounts
	if _, _, err := ReadJSONKeeping(bytes.NewReader(data), func(a *AttemptRow) bool { counts.Add(a); return false }); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	asked := 0
	w := NewJUnitWriter(&out, r.Suite, counts, func(a *AttemptRow) (*events.GradeVeto, error) {
		asked++
		return FirstVetoOf(r.Suite, a.Run, facts), nil
	})
	if _, _, err := ReadJSONKeeping(bytes.NewReader(data), func(a *AttemptRow) bool { w.Case(a); return false }); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if asked != counts.failures {
		t.Errorf("the writer asked for %d vetoes, want one for each of the %d failures", asked, counts.failures)
	}
	return out.Bytes()
}

// The JUnit file written a case at a time from the report's JSON, each
// failure's veto looked up in the log, is WriteJUnit's of the report
// built from the log, byte for byte, for every kind of test case and for
// none; and it is valid JUnit.
func TestJUnitWriterWritesWriteJUnitsBytes(t *testing.T) {
	l := junitSuiteOfEveryKind(t)
	r := l.report()
	var want bytes.Buffer
	if err := WriteJUnit(&want, r); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`tests="12" failures="4" errors="2"`, `skipped="5"`,
		`message="tests vetoes req-sum: sum(2, 2) returned 5 &lt;not 4&gt; &amp; &#34;more&#34;&#xA;&#39;quoted&#39;&#x9;]]&gt;"`,
		`message="graded failed"`, `message="tests vetoes req-new: the second revision&#39;s"`,
		`message="tests vetoes req-again: the second candidate&#39;s"`, `type="disputed"`, `type="invalid"`} {
		if !strings.Contains(want.String(), part) {
			t.Fatalf("the fixture's JUnit lacks %s:\n%s", part, want.String())
		}
	}
	got := streamJUnit(t, r, l.facts)
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("streamed:\n%s\nWriteJUnit:\n%s", got, want.String())
	}
	if err := validateJUnit(t, got); err != nil {
		t.Fatalf("the streamed JUnit file is not valid JUnit: %v\n%s", err, got)
	}

	for _, empty := range []Report{{Suite: "none"}, {Suite: "none", Attempts: []AttemptRow{}}} {
		want.Reset()
		if err := WriteJUnit(&want, empty); err != nil {
			t.Fatal(err)
		}
		if got := streamJUnit(t, empty, nil); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("no attempts: streamed\n%s\nWriteJUnit:\n%s", got, want.String())
		}
	}
}

// The veto a failure says is the one the report built from the log
// holds: FirstVetoOf reads a run's facts as the report does.
func TestFirstVetoOfIsTheRowsFirstVeto(t *testing.T) {
	l := junitSuiteOfEveryKind(t)
	for _, a := range l.report().Attempts {
		got := FirstVetoOf("s", a.Run, l.facts)
		if (got == nil) != (a.FirstVeto == nil) || got != nil && !reflect.DeepEqual(*got, *a.FirstVeto) {
			t.Errorf("%s (%s): FirstVetoOf %+v, the row's %+v", a.Run, a.Outcome, got, a.FirstVeto)
		}
	}
}

// A JUnitWriter writes exactly the cases its head counted: one more, or
// one fewer, is an error, and so is a veto that cannot be looked up.
func TestJUnitWriterHoldsToItsCounts(t *testing.T) {
	row := AttemptRow{Run: "r", Case: "c", Treatment: "t", Trial: 1, Outcome: OutcomeFailed}
	var one JUnitCounts
	one.Add(&row)
	none := func(*AttemptRow) (*events.GradeVeto, error) { return nil, nil }
	if err := NewJUnitWriter(&bytes.Buffer{}, "s", one, none).Close(); err == nil {
		t.Error("a file with fewer cases than it counted closed without an error")
	}
	w := NewJUnitWriter(&bytes.Buffer{}, "s", one, none)
	if err := w.Case(&row); err != nil {
		t.Fatal(err)
	}
	if err := w.Case(&row); err == nil {
		t.Error("a case more than the head counted was written")
	}
	w = NewJUnitWriter(&bytes.Buffer{}, "s", one, func(*AttemptRow) (*events.GradeVeto, error) { return nil, errLookup })
	w.Case(&row)
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), errLookup.Error()) {
		t.Errorf("a veto not looked up: Close says %v", err)
	}
}

var errLookup = errors.New("the log cannot be read")
