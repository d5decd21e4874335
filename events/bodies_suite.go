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
	// Through is the stream sequence of the newest fact of the suite the
	// report folded (0: not recorded, as by a meter before it). A reader
	// that finds no fact of the suite after it but suite.reported facts
	// may take the report blob for a rebuild from the log as it is now.
	Through uint64 `msgpack:"through,omitempty"`
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

// ReasonSuiteStopped is the run.ended reason of a run its runner did not
// run because its suite had stopped early (suite.stopped).
const ReasonSuiteStopped = "suite_stopped"

// The reasons a suite stops early.
const (
	// StopDifference: the confidence sequence for the comparison excludes
	// no difference.
	StopDifference = "difference"
	// StopEquivalence: it lies within the declared margin of no
	// difference.
	StopEquivalence = "equivalence"
)

// SuiteStopped (suite.stopped, suite-scoped) records that a suite stops
// early: its stopping comparison is settled (suites.Stopping). Runs not yet
// started are not run (their runner ends them cancelled, reason
// "suite_stopped"); runs in flight finish and are reported. The interval
// is the anytime-valid confidence sequence's, in pass-rate difference
// B − A, in thousandths (−1000 … 1000).
type SuiteStopped struct {
	Comparison string `msgpack:"comparison"` // "A vs B"
	Reason     string `msgpack:"reason"`     // difference | equivalence
	Pairs      uint32 `msgpack:"pairs"`
	Confidence uint32 `msgpack:"confidence"` // in thousandths, e.g. 950
	Low        int32  `msgpack:"low"`
	High       int32  `msgpack:"high"`
	// Scorer names the scorer whose paired difference settled the
	// comparison; empty for the pass rate (and in facts before scores).
	Scorer string `msgpack:"scorer,omitempty"`
}

// Kind implements Body.
func (SuiteStopped) Kind() Kind { return KindSuiteStopped }

func (b SuiteStopped) validate(p string) error {
	if err := needString(p, "comparison", b.Comparison); err != nil {
		return err
	}
	if err := needOneOf(p, "reason", b.Reason, []string{StopDifference, StopEquivalence}); err != nil {
		return err
	}
	if err := needPositive(p, "pairs", b.Pairs); err != nil {
		return err
	}
	if b.Confidence == 0 || b.Confidence >= 1000 {
		return invalid(join(p, "confidence"), "%d is not a level in thousandths between 1 and 999", b.Confidence)
	}
	if b.Low < -1000 || b.High > 1000 || b.Low > b.High {
		return invalid(join(p, "low"), "[%d, %d] is not an interval within [-1000, 1000]", b.Low, b.High)
	}
	return nil
}
