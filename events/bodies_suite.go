package events

import "slices"

// Ref names a versioned input (a case or a treatment) by ID and content digest.
type Ref struct {
	ID     string `msgpack:"id"`
	Digest Digest `msgpack:"digest"`
}

func (r Ref) validate(p string) error {
	if err := needString(p, "id", r.ID); err != nil {
		return err
	}
	return needDigest(p, "digest", r.Digest)
}

// SuiteSubmitted (suite.submitted, suite-scoped) fixes a suite's roster: the
// cases, treatments and number of trials. The full spec is a blob. Split and
// ValidOutcomes are optional: the split the suite measures (a label such as
// dev or holdout that keeps results of different splits apart) and the run
// statuses whose attempts count; the meter excludes the others.
type SuiteSubmitted struct {
	Name          string         `msgpack:"name"`
	SpecDigest    Digest         `msgpack:"spec_digest"`
	Cases         []Ref          `msgpack:"cases"`
	Treatments    []Ref          `msgpack:"treatments"`
	Trials        uint32         `msgpack:"trials"`
	Required      []InstrumentID `msgpack:"required,omitempty"`
	Split         string         `msgpack:"split,omitempty"`
	ValidOutcomes []RunStatus    `msgpack:"valid_outcomes,omitempty"`
}

// Kind implements Body.
func (SuiteSubmitted) Kind() Kind { return KindSuiteSubmitted }

func (b SuiteSubmitted) validate(p string) error {
	if err := needString(p, "name", b.Name); err != nil {
		return err
	}
	if err := needDigest(p, "spec_digest", b.SpecDigest); err != nil {
		return err
	}
	if err := needNonEmpty(p, "cases", b.Cases); err != nil {
		return err
	}
	if err := each(p, "cases", b.Cases); err != nil {
		return err
	}
	if err := needNonEmpty(p, "treatments", b.Treatments); err != nil {
		return err
	}
	if err := each(p, "treatments", b.Treatments); err != nil {
		return err
	}
	if err := needPositive(p, "trials", b.Trials); err != nil {
		return err
	}
	if err := eachString(p, "required", b.Required); err != nil {
		return err
	}
	for i, s := range b.ValidOutcomes {
		if !slices.Contains(runStatuses, s) {
			return invalid(at(join(p, "valid_outcomes"), i), "unknown run status %q (want one of %v)", string(s), runStatuses)
		}
	}
	return nil
}

// SuiteReported (suite.reported, suite-scoped) closes a suite's measurement.
// Pending, invalid, abstained and excluded attempts are counted apart from
// failures; the full report is a blob.
type SuiteReported struct {
	ReportDigest Digest `msgpack:"report_digest"`
	Attempts     uint32 `msgpack:"attempts"`
	Passed       uint32 `msgpack:"passed"`
	Failed       uint32 `msgpack:"failed"`
	Pending      uint32 `msgpack:"pending"`
	Invalid      uint32 `msgpack:"invalid"`
	Abstained    uint32 `msgpack:"abstained"`
	Excluded     uint32 `msgpack:"excluded"`
}

// Kind implements Body.
func (SuiteReported) Kind() Kind { return KindSuiteReported }

func (b SuiteReported) validate(p string) error {
	if err := needDigest(p, "report_digest", b.ReportDigest); err != nil {
		return err
	}
	sum := uint64(b.Passed) + uint64(b.Failed) + uint64(b.Pending) + uint64(b.Invalid) + uint64(b.Abstained) + uint64(b.Excluded)
	if sum != uint64(b.Attempts) {
		return invalid(join(p, "attempts"), "outcome counts add up to %d, not %d", sum, b.Attempts)
	}
	return nil
}
