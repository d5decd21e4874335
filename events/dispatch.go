package events

import "slices"

// Disposition says what happened to a requested tool call.
type Disposition string

// Dispositions of a completed dispatch.
const (
	DispositionExecuted Disposition = "executed"
	DispositionRejected Disposition = "rejected"
	DispositionDeferred Disposition = "deferred"
	DispositionCanceled Disposition = "canceled"
	// DispositionNotRun settles a call of a reply that was never started:
	// a budget overrun or a cancel cut the reply off before it.
	DispositionNotRun Disposition = "not_run"
)

var dispositions = []Disposition{DispositionExecuted, DispositionRejected, DispositionDeferred, DispositionCanceled, DispositionNotRun}

// Dispositions lists every disposition of a completed dispatch.
func Dispositions() []Disposition { return slices.Clone(dispositions) }

// Outcome of an external effect (a call whose effect class is external or
// irreversible), as far as the harness knows it: applied, not_applied or
// unknown. Unknown is an answer lost after the request may have reached
// the sink (a timeout, a reset connection, a cancel while in flight): it
// is never reported as not applied, and never as retryable.
const OutcomeUnknown = "unknown"

var effectOutcomes = []string{OutcomeApplied, OutcomeNotApplied, OutcomeUnknown}

// Mutation says whether a dispatch changed the workspace. Only applied earns
// write credit; identity is the workspace's content digest, never a label.
type Mutation string

// Mutation outcomes of a completed dispatch.
const (
	MutationApplied       Mutation = "applied"
	MutationUnchanged     Mutation = "unchanged"
	MutationNotApplied    Mutation = "not_applied"
	MutationNotApplicable Mutation = "not_applicable"
)

var mutations = []Mutation{MutationApplied, MutationUnchanged, MutationNotApplied, MutationNotApplicable}

// CompletedDispatch is the settled record of one tool call.
type CompletedDispatch struct {
	CallID       CallID       `msgpack:"call_id"`
	EvidenceRef  EvidenceRef  `msgpack:"evidence_ref"`
	Disposition  Disposition  `msgpack:"disposition"`
	Mutation     Mutation     `msgpack:"mutation"`
	Verification Verification `msgpack:"verification"`
	// Check names the case's declared check this dispatch ran, if any;
	// its verification is then that check's result.
	Check string `msgpack:"check,omitempty"`
	// Tool is the tool that was called (empty in facts written before it
	// was added).
	Tool string `msgpack:"tool,omitempty"`
	// Digest is the workspace digest after the dispatch (the source epoch
	// later checks compare against), when the runner knows it.
	Digest Digest `msgpack:"digest,omitempty"`
	// Outcome is what an external effect did: applied, not_applied or
	// unknown (empty for workspace tools, and in facts written before it
	// was added).
	Outcome string `msgpack:"outcome,omitempty"`
}

func (d CompletedDispatch) validate(p string) error {
	if err := needString(p, "call_id", d.CallID); err != nil {
		return err
	}
	if err := needString(p, "evidence_ref", d.EvidenceRef); err != nil {
		return err
	}
	if err := needOneOf(p, "disposition", d.Disposition, dispositions); err != nil {
		return err
	}
	if err := needOneOf(p, "mutation", d.Mutation, mutations); err != nil {
		return err
	}
	if err := optDigest(p, "digest", d.Digest); err != nil {
		return err
	}
	if d.Outcome != "" {
		if err := needOneOf(p, "outcome", d.Outcome, effectOutcomes); err != nil {
			return err
		}
	}
	return d.Verification.validate(join(p, "verification"))
}

// Verification is what a dispatch proved about the declared check:
// not_verifier | not_run | pending | passed{source_epoch} |
// failed{source_epoch, diagnostics, complete} | unknown{reason}.
type Verification struct{ union[verificationSpec] }

// VerifyNotVerifier marks a dispatch that is not a verification at all.
type VerifyNotVerifier struct{}

// VerifyNotRun marks a verifier that did not execute.
type VerifyNotRun struct{}

// VerifyPending marks a verifier whose result is deferred.
type VerifyPending struct{}

// VerifyPassed is an executed pass at the given source epoch.
type VerifyPassed struct {
	SourceEpoch uint64 `msgpack:"source_epoch"`
}

// VerifyFailed is an executed failure. Complete says whether Diagnostics is
// the full error set (only a full set that shrinks proves progress).
type VerifyFailed struct {
	SourceEpoch uint64       `msgpack:"source_epoch"`
	Diagnostics []Diagnostic `msgpack:"diagnostics"`
	Complete    bool         `msgpack:"complete"`
}

// VerifyUnknown is a verifier whose outcome could not be established.
type VerifyUnknown struct {
	Reason string `msgpack:"reason"`
}

// Diagnostic is one error a verifier reported.
type Diagnostic struct {
	Message string `msgpack:"message"`
	File    string `msgpack:"file,omitempty"`
	Line    uint32 `msgpack:"line,omitempty"`
	Code    string `msgpack:"code,omitempty"`
}

func (d Diagnostic) validate(p string) error { return needString(p, "message", d.Message) }

func (VerifyNotVerifier) variantType() string { return "not_verifier" }
func (VerifyNotRun) variantType() string      { return "not_run" }
func (VerifyPending) variantType() string     { return "pending" }
func (VerifyPassed) variantType() string      { return "passed" }
func (VerifyFailed) variantType() string      { return "failed" }
func (VerifyUnknown) variantType() string     { return "unknown" }

func (v VerifyFailed) validate(p string) error {
	return each(p, "diagnostics", v.Diagnostics)
}

func (v VerifyUnknown) validate(p string) error { return needString(p, "reason", v.Reason) }

type verificationSpec struct{}

func (verificationSpec) names() []string { return verificationNames }

var verificationNames = []string{"not_verifier", "not_run", "pending", "passed", "failed", "unknown"}

func (verificationSpec) variants() map[string]func() variant { return verificationVariants }

var verificationVariants = map[string]func() variant{
	"not_verifier": func() variant { return &VerifyNotVerifier{} },
	"not_run":      func() variant { return &VerifyNotRun{} },
	"pending":      func() variant { return &VerifyPending{} },
	"passed":       func() variant { return &VerifyPassed{} },
	"failed":       func() variant { return &VerifyFailed{} },
	"unknown":      func() variant { return &VerifyUnknown{} },
}

func verification(v variant) Verification { return Verification{union[verificationSpec]{v}} }

// NotVerifier returns the not_verifier verification.
func NotVerifier() Verification { return verification(VerifyNotVerifier{}) }

// NotRun returns the not_run verification.
func NotRun() Verification { return verification(VerifyNotRun{}) }

// VerificationPending returns the pending verification.
func VerificationPending() Verification { return verification(VerifyPending{}) }

// Passed returns an executed pass at sourceEpoch.
func Passed(sourceEpoch uint64) Verification {
	return verification(VerifyPassed{SourceEpoch: sourceEpoch})
}

// Failed returns an executed failure with its diagnostics; complete says
// whether they are the full error set.
func Failed(sourceEpoch uint64, complete bool, diags ...Diagnostic) Verification {
	return verification(VerifyFailed{SourceEpoch: sourceEpoch, Diagnostics: diags, Complete: complete})
}

// VerificationUnknown returns an unknown outcome with its reason.
func VerificationUnknown(reason string) Verification {
	return verification(VerifyUnknown{Reason: reason})
}
