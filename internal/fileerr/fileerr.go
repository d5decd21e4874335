// Package fileerr is the one error type of a problem in an input file (a
// case, a treatment, a suite, a data file, an extension allowlist): the
// file, the line and the field path, located as precisely as the parser
// allows, and what is wrong.
//
// Each package that reads such files names its own instance of Error, so
// that errors.As still tells a case's problem from a suite's, and
// errors.Is matches the package's own sentinel (cases.ErrInvalid,
// suites.ErrInvalid, extensions.ErrInvalid).
package fileerr

import "fmt"

// Kind says which package's files an Error is about: Invalid returns the
// sentinel every such Error matches with errors.Is.
type Kind interface{ Invalid() error }

// Error is a problem in a file of kind K.
type Error[K Kind] struct {
	File  string // the file
	Line  int    // 1-based line of the field in the file; 0 when unknown
	Field string // the field path, e.g. checks[1].command; "" when none
	Msg   string
}

// Error renders the problem as "<file>[:<line>][: <field>]: <message>".
func (e *Error[K]) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += fmt.Sprintf(":%d", e.Line)
	}
	if e.Field != "" {
		loc += ": " + e.Field
	}
	return loc + ": " + e.Msg
}

// Is makes errors.Is(err, sentinel) true for the sentinel of K.
func (e *Error[K]) Is(target error) bool {
	var k K
	return target == k.Invalid()
}
