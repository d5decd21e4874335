package events

import "slices"

// InstrumentOutcome is what one grading instrument found.
type InstrumentOutcome string

// Instrument outcomes. errored and not_run are not failures: a required
// instrument in either state leaves the attempt pending.
const (
	InstrumentPassed    InstrumentOutcome = "passed"
	InstrumentFailed    InstrumentOutcome = "failed"
	InstrumentErrored   InstrumentOutcome = "errored"
	InstrumentNotRun    InstrumentOutcome = "not_run"
	InstrumentAbstained InstrumentOutcome = "abstained"
)

var instrumentOutcomes = []InstrumentOutcome{InstrumentPassed, InstrumentFailed, InstrumentErrored, InstrumentNotRun, InstrumentAbstained}

// InstrumentResult is the result of one instrument on one sealed candidate.
type InstrumentResult struct {
	Instrument InstrumentID      `msgpack:"instrument"`
	Version    string            `msgpack:"version"`
	Required   bool              `msgpack:"required"`
	Outcome    InstrumentOutcome `msgpack:"outcome"`
	Detail     string            `msgpack:"detail,omitempty"`
	Evidence   []EvidenceRef     `msgpack:"evidence,omitempty"`
	// Score is what the instrument measured beside its outcome, when its
	// case asks it for a score (a command's score line or JUnit report, a
	// judge's rating); absent otherwise and in older facts.
	Score *InstrumentScore `msgpack:"score,omitempty"`
}

func (r InstrumentResult) validate(p string) error {
	if err := needString(p, "instrument", r.Instrument); err != nil {
		return err
	}
	if err := needString(p, "version", r.Version); err != nil {
		return err
	}
	if err := needOneOf(p, "outcome", r.Outcome, instrumentOutcomes); err != nil {
		return err
	}
	if err := eachString(p, "evidence", r.Evidence); err != nil {
		return err
	}
	if r.Score != nil {
		return r.Score.validate(join(p, "score"))
	}
	return nil
}

// GradeVeto is an instrument's objection to one requirement. The case policy
// says whether it binds.
type GradeVeto struct {
	Instrument  InstrumentID  `msgpack:"instrument"`
	Requirement RequirementID `msgpack:"requirement"`
	Reason      string        `msgpack:"reason"`
	Evidence    []EvidenceRef `msgpack:"evidence"`
	Binding     bool          `msgpack:"binding"`
}

func (v GradeVeto) validate(p string) error {
	if err := needString(p, "instrument", v.Instrument); err != nil {
		return err
	}
	if err := needString(p, "requirement", v.Requirement); err != nil {
		return err
	}
	if err := needString(p, "reason", v.Reason); err != nil {
		return err
	}
	return eachString(p, "evidence", v.Evidence)
}

// GraderVerdict is one grade of one sealed snapshot. Revisions append; a
// later revision never rewrites an earlier one.
type GraderVerdict struct {
	AttemptID   string             `msgpack:"attempt_id"`
	SnapshotID  Digest             `msgpack:"snapshot_id"`
	Revision    uint32             `msgpack:"revision"`
	Instruments []InstrumentResult `msgpack:"instruments"`
	Vetoes      []GradeVeto        `msgpack:"vetoes"`
	Result      VerdictResult      `msgpack:"result"`
	// Scores are the case's scorers' scores of the snapshot, in the
	// case's order; absent when the case declares no scorer, and in older
	// facts.
	Scores []Score `msgpack:"scores,omitempty"`
}

func (g GraderVerdict) validate(p string) error {
	if err := needString(p, "attempt_id", g.AttemptID); err != nil {
		return err
	}
	if err := needDigest(p, "snapshot_id", g.SnapshotID); err != nil {
		return err
	}
	if err := needPositive(p, "revision", g.Revision); err != nil {
		return err
	}
	if err := each(p, "instruments", g.Instruments); err != nil {
		return err
	}
	if err := each(p, "vetoes", g.Vetoes); err != nil {
		return err
	}
	if err := g.Result.validate(join(p, "result")); err != nil {
		return err
	}
	if err := each(p, "scores", g.Scores); err != nil {
		return err
	}
	for i, s := range g.Scores {
		for _, e := range g.Scores[:i] {
			if e.Scorer == s.Scorer {
				return invalid(at(join(p, "scores"), i), "scorer %q is listed twice", s.Scorer)
			}
		}
	}
	if _, ok := g.Result.v.(VerdictPassed); ok {
		for i, v := range g.Vetoes {
			if v.Binding {
				return invalid(at(join(p, "vetoes"), i), "a passed verdict cannot carry a binding veto")
			}
		}
	}
	return nil
}

// VerdictResult is passed | failed | pending{instruments} | invalid{reason} |
// abstained{reason}.
type VerdictResult struct{ union[verdictSpec] }

// VerdictPassed: every required instrument ran and passed, no binding veto.
type VerdictPassed struct{}

// VerdictFailed: a required instrument ran and failed, or a binding veto.
type VerdictFailed struct{}

// VerdictPending: required instruments have not produced a result yet.
type VerdictPending struct {
	Instruments []InstrumentID `msgpack:"instruments"`
}

// VerdictInvalid: the attempt has no gradable answer (e.g. no candidate).
type VerdictInvalid struct {
	Reason string `msgpack:"reason"`
}

// VerdictAbstained: the grader declined to judge.
type VerdictAbstained struct {
	Reason string `msgpack:"reason"`
}

func (VerdictPassed) variantType() string    { return "passed" }
func (VerdictFailed) variantType() string    { return "failed" }
func (VerdictPending) variantType() string   { return "pending" }
func (VerdictInvalid) variantType() string   { return "invalid" }
func (VerdictAbstained) variantType() string { return "abstained" }

func (v VerdictPending) validate(p string) error {
	if err := needNonEmpty(p, "instruments", v.Instruments); err != nil {
		return err
	}
	return eachString(p, "instruments", v.Instruments)
}

func (v VerdictInvalid) validate(p string) error   { return needString(p, "reason", v.Reason) }
func (v VerdictAbstained) validate(p string) error { return needString(p, "reason", v.Reason) }

type verdictSpec struct{}

func (verdictSpec) names() []string { return verdictNames }

var verdictNames = []string{"passed", "failed", "pending", "invalid", "abstained"}

// VerdictResultTypes lists the Type of every verdict result.
func VerdictResultTypes() []string { return slices.Clone(verdictNames) }

func (verdictSpec) variants() map[string]func() variant { return verdictVariants }

var verdictVariants = map[string]func() variant{
	"passed":    func() variant { return &VerdictPassed{} },
	"failed":    func() variant { return &VerdictFailed{} },
	"pending":   func() variant { return &VerdictPending{} },
	"invalid":   func() variant { return &VerdictInvalid{} },
	"abstained": func() variant { return &VerdictAbstained{} },
}

func verdict(v variant) VerdictResult { return VerdictResult{union[verdictSpec]{v}} }

// VerdictOK returns the passed result.
func VerdictOK() VerdictResult { return verdict(VerdictPassed{}) }

// VerdictFail returns the failed result.
func VerdictFail() VerdictResult { return verdict(VerdictFailed{}) }

// VerdictWaiting returns a pending result naming the instruments still owed.
func VerdictWaiting(instruments ...InstrumentID) VerdictResult {
	return verdict(VerdictPending{Instruments: instruments})
}

// VerdictNoAnswer returns an invalid result.
func VerdictNoAnswer(reason string) VerdictResult { return verdict(VerdictInvalid{Reason: reason}) }

// VerdictAbstain returns an abstained result.
func VerdictAbstain(reason string) VerdictResult { return verdict(VerdictAbstained{Reason: reason}) }
