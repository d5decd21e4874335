package events

import (
	"fmt"
	"strings"
)

// Subject grammar. Facts live under fact.<suite>.<run>.<kind…>; control
// signals under ctl.<suite>.<run>.<signal>; live status under
// status.<suite>.<run>. Suite-scoped facts use SuiteScope as their run token.
const (
	FactPrefix    = "fact"
	ControlPrefix = "ctl"
	StatusPrefix  = "status"
	// SuiteScope is the run token of suite-scoped facts (suite.submitted,
	// suite.reported). Run IDs never start with '_', so it cannot collide.
	SuiteScope = "_suite"
	// maxToken bounds a suite or run token so subjects stay short.
	maxToken = 128
)

// ValidateToken checks that tok can be one subject token: 1 to 128 of
// A-Z a-z 0-9 '-' '_'. what names the token in the error ("suite", "run").
func ValidateToken(what, tok string) error {
	if tok == "" {
		return &FieldError{Field: what, Reason: "empty subject token", Err: ErrBadToken}
	}
	if len(tok) > maxToken {
		return &FieldError{Field: what, Reason: fmt.Sprintf("subject token is %d bytes, the limit is %d", len(tok), maxToken), Err: ErrBadToken}
	}
	for i, c := range tok {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return &FieldError{Field: what,
				Reason: fmt.Sprintf("character %q at byte %d of %q is not allowed in a subject token (use A-Z a-z 0-9 - _)", c, i, tok),
				Err:    ErrBadToken}
		}
	}
	return nil
}

// ValidateRunID checks a run ID: a valid token that does not start with '_'
// (reserved for scopes such as SuiteScope).
func ValidateRunID(run string) error {
	if err := ValidateToken("run", run); err != nil {
		return err
	}
	if strings.HasPrefix(run, "_") {
		return &FieldError{Field: "run", Reason: fmt.Sprintf("run ID %q may not start with '_' (reserved)", run), Err: ErrBadToken}
	}
	return nil
}

// FactSubject returns fact.<suite>.<run>.<kind>.
func FactSubject(suite, run string, kind Kind) (string, error) {
	if err := ValidateToken("suite", suite); err != nil {
		return "", err
	}
	if err := checkScope(run, kind); err != nil {
		return "", err
	}
	return FactPrefix + "." + suite + "." + run + "." + string(kind), nil
}

func checkScope(run string, kind Kind) error {
	if !kind.Known() {
		return &FieldError{Field: "kind", Reason: fmt.Sprintf("unknown kind %q", kind), Err: ErrUnknownKind}
	}
	if kind.SuiteScoped() {
		if run != SuiteScope {
			return &FieldError{Kind: kind, Field: "run", Reason: fmt.Sprintf("suite-scoped kind needs run %q, got %q", SuiteScope, run), Err: ErrInvalidField}
		}
		return nil
	}
	return ValidateRunID(run)
}

// RunFilter returns the wildcard subject that covers every fact of one run:
// fact.<suite>.<run>.>. Every writer uses exactly this string for optimistic
// concurrency on the run.
func RunFilter(suite, run string) string {
	return FactPrefix + "." + suite + "." + run + ".>"
}

// SuiteFilter returns fact.<suite>.> (every fact of a suite).
func SuiteFilter(suite string) string { return FactPrefix + "." + suite + ".>" }

// KindFilter returns fact.*.*.<kind>: one kind across all suites and runs.
func KindFilter(kind Kind) string { return FactPrefix + ".*.*." + string(kind) }

// ParseFactSubject splits a fact subject into its suite, run and kind. The
// kind must be a known one.
func ParseFactSubject(subject string) (suite, run string, kind Kind, err error) {
	parts := strings.SplitN(subject, ".", 4)
	if len(parts) != 4 || parts[0] != FactPrefix {
		return "", "", "", &FieldError{Field: "subject", Reason: fmt.Sprintf("%q is not fact.<suite>.<run>.<kind>", subject), Err: ErrBadToken}
	}
	suite, run, kind = parts[1], parts[2], Kind(parts[3])
	if err := ValidateToken("suite", suite); err != nil {
		return "", "", "", err
	}
	if err := checkScope(run, kind); err != nil {
		return "", "", "", err
	}
	return suite, run, kind, nil
}

// ControlSubject returns ctl.<suite>.<run>.<signal>.
func ControlSubject(suite, run string, sig Signal) (string, error) {
	if err := ValidateToken("suite", suite); err != nil {
		return "", err
	}
	if err := ValidateRunID(run); err != nil {
		return "", err
	}
	if err := needOneOf("", "signal", sig, signals); err != nil {
		return "", err
	}
	return ControlPrefix + "." + suite + "." + run + "." + string(sig), nil
}

// StatusSubject returns status.<suite>.<run>.
func StatusSubject(suite, run string) (string, error) {
	if err := ValidateToken("suite", suite); err != nil {
		return "", err
	}
	if err := ValidateRunID(run); err != nil {
		return "", err
	}
	return StatusPrefix + "." + suite + "." + run, nil
}
