package events

// Body is the typed payload of a fact. The set is closed: only the body
// types of this package implement it, one per Kind.
type Body interface {
	// Kind returns the fact kind this body belongs to.
	Kind() Kind
	validate(path string) error
}

// ValidateBody checks a body on its own, naming the failing field as
// "body.<field>".
func ValidateBody(b Body) error {
	if b == nil {
		return missing("body")
	}
	return withKind(b.Kind(), b.validate("body"))
}
