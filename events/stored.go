package events

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSubjectMismatch means a stored fact names a kind, suite or run other
// than the subject it was stored under. The server's permissions are
// granted per subject (a runner may publish on fact.*.*.run.ended), so a
// message's subject is what an identity was allowed to write and its body
// is only what that identity claims: a grade.verdict inside a run.ended
// message is a forgery, whatever its producer field says.
var ErrSubjectMismatch = errors.New("fact does not match its subject")

// SubjectMismatchError is a well-formed fact stored under a subject that
// names something else. Readers skip it and flag it; consumers
// dead-letter it.
type SubjectMismatchError struct {
	Subject string // the subject the message was stored under
	Field   string // the first envelope field that disagrees: "kind", "suite", "run" (or "subject" when it is no fact subject)
	Have    string // the field's value in the fact
	Want    string // what the subject says
	Fact    Fact   // the fact as decoded, for readers that show what was refused
}

func (e *SubjectMismatchError) Error() string {
	if e.Fact.Suite == "" && e.Fact.Run == "" {
		// A version 4 fact on no fact subject: it has no suite or run to name.
		return fmt.Sprintf("fact %s does not match its subject %s: %s is %q, the subject says %q",
			e.Fact.Kind(), e.Subject, e.Field, e.Have, e.Want)
	}
	return fmt.Sprintf("fact %s/%s/%s does not match its subject %s: %s is %q, the subject says %q",
		e.Fact.Suite, e.Fact.Run, e.Fact.Kind(), e.Subject, e.Field, e.Have, e.Want)
}

// Unwrap returns ErrSubjectMismatch, for errors.Is.
func (e *SubjectMismatchError) Unwrap() error { return ErrSubjectMismatch }

// DecodeStored decodes a message stored under subject and checks that the
// fact's kind, suite and run are the ones the subject names. It is how
// every reader of the log (consumers, run loads, replays, reports, the
// audit, tail, export and import) turns a stored message into a fact, so
// that a forged fact counts nowhere. A message that is no fact fails as
// Decode does; a fact that disagrees with its subject fails with a
// *SubjectMismatchError (errors.Is ErrSubjectMismatch) and no fact.
//
// A fact in envelope version 4 takes its suite and run from the subject
// (they cannot disagree with it), and its kind is checked as every
// version's is; on a subject that is no fact subject it is a mismatch of
// the field "subject".
func DecodeStored(subject string, data []byte) (Fact, error) {
	var ids *subjectIDs
	if suite, run, _, ok := splitSubject(subject); ok {
		ids = &subjectIDs{suite: suite, run: run}
	}
	f, err := decode(data, ids)
	if ids == nil && errors.Is(err, ErrNeedsSubject) {
		var fe *FieldError
		errors.As(err, &fe)
		return Fact{}, &SubjectMismatchError{Subject: subject, Field: "subject", Have: subject,
			Want: "fact.<suite>.<run>.<kind>", Fact: Fact{Body: kindOnly(fe.Kind)}}
	}
	if err != nil {
		return Fact{}, err
	}
	if err := MatchSubject(f, subject); err != nil {
		return Fact{}, err
	}
	return f, nil
}

// MatchSubject checks that f is the fact subject names: the same kind,
// suite and run. It returns nil or a *SubjectMismatchError.
func MatchSubject(f Fact, subject string) error {
	mk := func(field, have, want string) error {
		return &SubjectMismatchError{Subject: subject, Field: field, Have: have, Want: want, Fact: f}
	}
	suite, run, kind, ok := splitSubject(subject)
	if !ok {
		return mk("subject", subject, "fact.<suite>.<run>.<kind>")
	}
	switch {
	case string(f.Kind()) != kind:
		return mk("kind", string(f.Kind()), kind)
	case f.Suite != suite:
		return mk("suite", f.Suite, suite)
	case f.Run != run:
		return mk("run", f.Run, run)
	}
	return nil
}

// splitSubject cuts fact.<suite>.<run>.<kind> into its tokens, reporting
// false for a subject of another shape. Not ParseFactSubject: a subject
// whose kind this version does not know still says which kind it is, and
// the fact is compared against that. Cut, not Split: every reader runs
// this on every message.
func splitSubject(subject string) (suite, run, kind string, ok bool) {
	prefix, rest, ok1 := strings.Cut(subject, ".")
	suite, rest, ok2 := strings.Cut(rest, ".")
	run, kind, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 || prefix != FactPrefix {
		return "", "", "", false
	}
	return suite, run, kind, true
}

// kindOnly is an empty body of kind k (nil for a kind this version does not
// know): what a mismatch error shows of a fact it could not read whole.
func kindOnly(k Kind) Body {
	spec, ok := kinds[k]
	if !ok {
		return nil
	}
	return derefBody(spec.new())
}
