package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// A stored fact is what its subject says it is: the fact on its own
// subject decodes; the same bytes under another kind, suite or run are
// refused with a typed error that names the field and keeps the fact for
// whoever must show what was refused.
func TestDecodeStoredChecksTheSubject(t *testing.T) {
	verdict, err := events.NewFact(events.Meta{Suite: "s1", Run: "r1", TaskGeneration: 1, Position: 7,
		Producer: events.Producer{Service: events.OwnerGrader, Instance: "g"}},
		events.GradeVerdict{Verdict: events.GraderVerdict{AttemptID: "r1", SnapshotID: events.DigestOf([]byte("x")), Revision: 1,
			Instruments: []events.InstrumentResult{{Instrument: "tests", Version: "1", Required: true, Outcome: events.InstrumentPassed}},
			Result:      events.VerdictOK()}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := events.Encode(verdict)
	if err != nil {
		t.Fatal(err)
	}
	got, err := events.DecodeStored("fact.s1.r1.grade.verdict", data)
	if err != nil || got.ID != verdict.ID {
		t.Fatalf("on its own subject: %v", err)
	}
	for _, c := range []struct {
		subject, field, have, want string
	}{
		{"fact.s1.r1.run.ended", "kind", "grade.verdict", "run.ended"}, // a runner's subject
		{"fact.s2.r1.grade.verdict", "suite", "s1", "s2"},
		{"fact.s1.r2.grade.verdict", "run", "r1", "r2"},
		{"fact.s1.r1.no.such.kind", "kind", "grade.verdict", "no.such.kind"},
		{"dead.FACTS.grader", "subject", "dead.FACTS.grader", "fact.<suite>.<run>.<kind>"},
	} {
		f, err := events.DecodeStored(c.subject, data)
		var mm *events.SubjectMismatchError
		if !errors.Is(err, events.ErrSubjectMismatch) || !errors.As(err, &mm) {
			t.Fatalf("%s: %v, want a subject mismatch", c.subject, err)
		}
		if f.Body != nil {
			t.Fatalf("%s: a refused fact was returned", c.subject)
		}
		if mm.Subject != c.subject || mm.Field != c.field || mm.Have != c.have || mm.Want != c.want || mm.Fact.ID != verdict.ID {
			t.Fatalf("%s: %+v", c.subject, mm)
		}
		if msg := err.Error(); !strings.Contains(msg, "does not match its subject "+c.subject) || !strings.Contains(msg, c.field) {
			t.Fatalf("%s: message %q", c.subject, msg)
		}
	}
	// Bytes that are no fact fail as Decode fails, not as a mismatch.
	if _, err := events.DecodeStored("fact.s1.r1.run.ended", []byte("x")); err == nil || errors.Is(err, events.ErrSubjectMismatch) ||
		!errors.Is(err, events.ErrMalformed) {
		t.Fatalf("garbage: %v", err)
	}
}
