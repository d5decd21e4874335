package events

import (
	"errors"
	"fmt"
)

// Sentinel errors classify why a fact was refused. Match them with errors.Is;
// use errors.As with *FieldError to learn which field was wrong.
var (
	// ErrMalformed means the bytes are not a msgpack fact at all.
	ErrMalformed = errors.New("malformed fact")
	// ErrUnknownKind means the kind is not one this version knows.
	ErrUnknownKind = errors.New("unknown fact kind")
	// ErrUnsupportedVersion means the fact was written by a newer schema
	// whose meaning this reader cannot know.
	ErrUnsupportedVersion = errors.New("unsupported schema version")
	// ErrUnknownVariant means a union carried a discriminator it does not admit.
	ErrUnknownVariant = errors.New("unknown union variant")
	// ErrMissingField means a required field was absent or empty.
	ErrMissingField = errors.New("missing required field")
	// ErrInvalidField means a field was present but its value is not allowed.
	ErrInvalidField = errors.New("invalid field value")
	// ErrBadToken means a subject token would break the subject grammar.
	ErrBadToken = errors.New("bad subject token")
	// ErrNeedsSubject means a fact in envelope version 4, whose suite and
	// run are its subject's, was read without the subject it was stored
	// on (Decode, not DecodeStored).
	ErrNeedsSubject = errors.New("fact needs the subject it was stored on")
)

// FieldError names the field of a fact that failed a check. Field is a dotted
// path from the envelope, e.g. "body.evidence.actor_intent.type".
type FieldError struct {
	Kind   Kind   // the fact kind, when known
	Field  string // dotted path of the offending field
	Reason string // what is wrong, for people
	Err    error  // one of the sentinel errors, for errors.Is
}

func (e *FieldError) Error() string {
	if e.Kind != "" {
		return fmt.Sprintf("%s: %s: %s", e.Kind, e.Field, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

// Unwrap returns the sentinel classification.
func (e *FieldError) Unwrap() error { return e.Err }

func missing(field string) error {
	return &FieldError{Field: field, Reason: "required", Err: ErrMissingField}
}

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...), Err: ErrInvalidField}
}

// withKind stamps the fact kind on a FieldError so that messages name both
// the kind and the field.
func withKind(k Kind, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) && fe.Kind == "" {
		cp := *fe
		cp.Kind = k
		return &cp
	}
	return err
}
