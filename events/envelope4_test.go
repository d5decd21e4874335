package events_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/factline/factline/events"
)

// Version 4 is version 3's array without the suite and the run (positions
// 4 and 5): every other element is version 3's, byte for byte, for every
// golden fixture.
func TestEnvelopeV4IsVersion3WithoutSuiteAndRun(t *testing.T) {
	for _, c := range goldenFacts(t) {
		v3 := rawElements(t, mustEncode(t, c.fact))
		b, err := events.EncodeStored(c.fact)
		if err != nil {
			t.Fatal(err)
		}
		v4 := rawElements(t, b)
		if len(v4) != 11 || !bytes.Equal(v4[0], []byte{0x04}) {
			t.Fatalf("%s: %d elements, the first %x; want 11 and the version 4", c.name, len(v4), v4[0])
		}
		want := append(v3[1:4:4], v3[6:]...)
		for i, e := range v4[1:] {
			if !bytes.Equal(e, want[i]) {
				t.Errorf("%s: element %d is %x in version 4, %x in version 3", c.name, i+1, e, want[i])
			}
		}
		if saved := len(mustEncode(t, c.fact)) - len(b); saved != len(v3[4])+len(v3[5]) {
			t.Errorf("%s: version 4 is %d bytes shorter, the suite and run take %d", c.name, saved, len(v3[4])+len(v3[5]))
		}
	}
}

// Any fact stored on its subject reads back unchanged from version 4 with
// that subject, and re-encodes to the same bytes.
func TestRoundTripStoredAnyFact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFact.Draw(t, "fact")
		subject, err := f.Subject()
		if err != nil {
			t.Fatalf("valid %s fact has no subject: %v", f.Kind(), err)
		}
		b, err := events.EncodeStored(f)
		if err != nil {
			t.Fatalf("encode %s: %v", f.Kind(), err)
		}
		got, err := events.DecodeStored(subject, b)
		if err != nil {
			t.Fatalf("decode %s on %s: %v", f.Kind(), subject, err)
		}
		if !reflect.DeepEqual(got, f) {
			t.Fatalf("round trip changed the fact:\n got %#v\nwant %#v", got, f)
		}
		if again, err := events.EncodeStored(got); err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %s gave different bytes (%v):\n%x\n%x", f.Kind(), err, again, b)
		}
		if _, err := events.Decode(b); !errors.Is(err, events.ErrNeedsSubject) {
			t.Fatalf("version 4 read without a subject: %v, want ErrNeedsSubject", err)
		}
	})
}

// A reader without the subject does not make up a suite and a run: Decode
// and WireMap refuse a version 4 fact with a typed error that names the
// subject as what is missing, and so does DecodeStored on a subject that
// names no suite and run (a dead letter's).
func TestAVersion4FactWithoutItsSubjectIsRefused(t *testing.T) {
	f := goldenFact(t, "run_claimed")
	b, err := events.EncodeStored(f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = events.Decode(b)
	var fe *events.FieldError
	if !errors.Is(err, events.ErrNeedsSubject) || !errors.As(err, &fe) || fe.Field != "subject" || fe.Kind != events.KindRunClaimed {
		t.Fatalf("Decode: %v (%#v), want a *FieldError on the subject with ErrNeedsSubject", err, fe)
	}
	if !strings.Contains(err.Error(), "envelope version 4") {
		t.Errorf("the refusal does not say why: %q", err)
	}
	if m, err := events.WireMap(b); !errors.Is(err, events.ErrNeedsSubject) {
		t.Fatalf("WireMap: %v %v, want ErrNeedsSubject", m, err)
	}
	_, err = events.DecodeStored("dead.FACTS.grader", b)
	var mm *events.SubjectMismatchError
	if !errors.As(err, &mm) || mm.Field != "subject" || mm.Fact.Kind() != events.KindRunClaimed || mm.Fact.Suite != "" {
		t.Fatalf("on no fact subject: %v (%+v), want a mismatch of the subject", err, mm)
	}
	if !strings.Contains(err.Error(), "does not match its subject dead.FACTS.grader") {
		t.Errorf("message %q", err)
	}
}

// The subject still decides a version 4 fact's kind: the bytes of a
// grade.verdict under a runner's run.ended subject are refused as a
// mismatch of the kind, as in every version. Its suite and run cannot
// disagree with the subject, whose permission is what the server checked:
// under another run's subject the same bytes are that run's fact.
func TestAVersion4FactIsCheckedAgainstItsSubject(t *testing.T) {
	verdict := goldenFact(t, "grade_verdict_passed")
	b, err := events.EncodeStored(verdict)
	if err != nil {
		t.Fatal(err)
	}
	subject := "fact." + verdict.Suite + "." + verdict.Run + ".run.ended"
	_, err = events.DecodeStored(subject, b)
	var mm *events.SubjectMismatchError
	if !errors.As(err, &mm) || mm.Field != "kind" || mm.Have != "grade.verdict" || mm.Want != "run.ended" {
		t.Fatalf("under %s: %v, want a mismatch of the kind", subject, err)
	}
	got, err := events.DecodeStored("fact.other.r-9.grade.verdict", b)
	if err != nil || got.Suite != "other" || got.Run != "r-9" {
		t.Fatalf("under another run's subject: %v, suite %q run %q", err, got.Suite, got.Run)
	}
	// A subject token the fact's validation refuses is refused too.
	if _, err := events.DecodeStored("fact.s.r_.grade.verdict", b); err != nil {
		t.Fatalf("a run token that is valid: %v", err)
	}
	if _, err := events.DecodeStored("fact.s._r.grade.verdict", b); !errors.Is(err, events.ErrBadToken) {
		t.Fatalf("a run token reserved for scopes: %v, want ErrBadToken", err)
	}
}

// WireMapStored shows a version 4 fact with its subject's suite and run,
// as the same fact in version 3 shows.
func TestWireMapStoredOfVersion4AgreesWithVersion3(t *testing.T) {
	for _, c := range goldenFacts(t) {
		subject := goldenSubject(t, c.fact)
		b, err := events.EncodeStored(c.fact)
		if err != nil {
			t.Fatal(err)
		}
		got, err := events.WireMapStored(subject, b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := events.WireMap(mustEncode(t, c.fact))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normaliseTree(got), normaliseTree(want)) {
			t.Errorf("%s: version 4 shows\n  %v\nversion 3\n  %v", c.name, got, want)
		}
	}
}
