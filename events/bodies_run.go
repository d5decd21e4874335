package events

import "slices"

// Budget holds a run's hard limits. A zero field means no limit of that kind.
type Budget struct {
	Steps   uint32 `msgpack:"steps"`
	Tokens  uint64 `msgpack:"tokens"`
	Seconds uint32 `msgpack:"seconds"`
	Cost    uint64 `msgpack:"cost"` // integer cost units
}

// Spent is what a run consumed. Tokens and Cost are nil when any part of the
// run reported no usage: unknown never becomes zero.
type Spent struct {
	Steps  uint32  `msgpack:"steps" json:"steps"`
	Tokens *uint64 `msgpack:"tokens,omitempty" json:"tokens,omitempty"`
	Cost   *uint64 `msgpack:"cost,omitempty" json:"cost,omitempty"`
	Millis uint64  `msgpack:"millis" json:"millis"`
}

// RunRequested (run.requested) asks for one attempt: a case under a
// treatment, trial n. Identity and Components are optional: the agent
// identity of the attempt (a digest over its components: model contract,
// harness version, capabilities and policies) and the components
// themselves, so that two results are compared only when their identities
// say what differs.
type RunRequested struct {
	Case            string      `msgpack:"case"`
	CaseDigest      Digest      `msgpack:"case_digest"`
	Treatment       string      `msgpack:"treatment"`
	TreatmentDigest Digest      `msgpack:"treatment_digest"`
	Trial           uint32      `msgpack:"trial"`
	Budget          Budget      `msgpack:"budget"`
	Identity        Digest      `msgpack:"identity,omitempty"`
	Components      []Component `msgpack:"components,omitempty"`
	// RetryOf, when set, is the earlier run of the same planned attempt
	// that this run retries (it ended as a harness error). The report
	// counts the newest attempt and lists every earlier one.
	RetryOf string `msgpack:"retry_of,omitempty"`
}

// Component is one named part of an agent identity and its value (a short
// canonical text or a digest), e.g. {"harness", "0.1.0"}.
type Component struct {
	Name  string `msgpack:"name" json:"name"`
	Value string `msgpack:"value" json:"value"`
}

// Kind implements Body.
func (RunRequested) Kind() Kind { return KindRunRequested }

func (b RunRequested) validate(p string) error {
	if err := needString(p, "case", b.Case); err != nil {
		return err
	}
	if err := needDigest(p, "case_digest", b.CaseDigest); err != nil {
		return err
	}
	if err := needString(p, "treatment", b.Treatment); err != nil {
		return err
	}
	if err := needDigest(p, "treatment_digest", b.TreatmentDigest); err != nil {
		return err
	}
	if err := needPositive(p, "trial", b.Trial); err != nil {
		return err
	}
	if err := optDigest(p, "identity", b.Identity); err != nil {
		return err
	}
	// Components are sorted by name with no repeats, so that one identity
	// has one encoding.
	for i, c := range b.Components {
		f := at(join(p, "components"), i)
		if err := needString(f, "name", c.Name); err != nil {
			return err
		}
		if i > 0 && b.Components[i-1].Name >= c.Name {
			return invalid(join(f, "name"), "components must be sorted by name without repeats (%q after %q)", c.Name, b.Components[i-1].Name)
		}
	}
	if b.RetryOf != "" {
		if err := ValidateToken("retry_of", b.RetryOf); err != nil {
			return invalid(join(p, "retry_of"), "%v", err)
		}
	}
	return nil
}

// RunClaimed (run.claimed) records that a runner took the run. Lease counts
// claims: a resumed run has lease > 1, and the stale holder loses its next
// append.
type RunClaimed struct {
	Runner     string `msgpack:"runner"`
	Lease      uint32 `msgpack:"lease"`
	ResumeFrom uint64 `msgpack:"resume_from,omitempty"` // last position seen by the claimer
	// Containment is how this runner contains the commands it runs, as its
	// host let it (absent, and ContainmentDigest too: not recorded, as in
	// facts of older runners).
	Containment *Containment `msgpack:"containment,omitempty"`
	// ContainmentDigest names the same record stored as a blob
	// (ContainmentBlob) instead of written here: a runner's record is the
	// same for every run it claims, so its claims name it and the blob
	// store keeps it once. A claim holds the record or its digest, never
	// both; ClaimedContainment reads either.
	ContainmentDigest Digest `msgpack:"containment_digest,omitempty"`
	// Extensions are the extensions the runner admitted for this claim
	// (their source, server version and capabilities; absent for a run
	// that uses none), and Identity the agent identity of what ran: the
	// requested components with the extensions component replaced by what
	// was admitted and the harness component by the runner's build and
	// behaviour digest. Older runners set Identity only with extensions.
	Extensions []Extension `msgpack:"extensions,omitempty"`
	Identity   Digest      `msgpack:"identity,omitempty"`
}

// Kind implements Body.
func (RunClaimed) Kind() Kind { return KindRunClaimed }

func (b RunClaimed) validate(p string) error {
	if err := needString(p, "runner", b.Runner); err != nil {
		return err
	}
	if err := each(p, "extensions", b.Extensions); err != nil {
		return err
	}
	if err := optDigest(p, "identity", b.Identity); err != nil {
		return err
	}
	if err := needPositive(p, "lease", b.Lease); err != nil {
		return err
	}
	if err := optDigest(p, "containment_digest", b.ContainmentDigest); err != nil {
		return err
	}
	if b.Containment != nil {
		if b.ContainmentDigest != "" {
			return invalid(join(p, "containment_digest"), "a claim holds its containment or the digest of its blob, not both")
		}
		return b.Containment.validate(join(p, "containment"))
	}
	return nil
}

// ControlAccepted (control.accepted) is a runner taking a control signal.
// Steer carries the instruction; approve and reject name the exact call by
// the digest of its arguments.
type ControlAccepted struct {
	Control     ControlRef `msgpack:"control"`
	Instruction string     `msgpack:"instruction,omitempty"`
	CallID      CallID     `msgpack:"call_id,omitempty"`
	ArgsDigest  Digest     `msgpack:"args_digest,omitempty"`
	Reason      string     `msgpack:"reason,omitempty"`
	// Operation and Outcome record a resolution: the operation a person
	// settled and what they found (applied or not_applied).
	Operation string `msgpack:"operation,omitempty"`
	Outcome   string `msgpack:"outcome,omitempty"`
}

// Kind implements Body.
func (ControlAccepted) Kind() Kind { return KindControlAccepted }

func (b ControlAccepted) validate(p string) error {
	if err := b.Control.validate(join(p, "control")); err != nil {
		return err
	}
	switch b.Control.Signal {
	case SignalSteer:
		return needString(p, "instruction", b.Instruction)
	case SignalApprove, SignalReject:
		if err := needString(p, "call_id", b.CallID); err != nil {
			return err
		}
		return needDigest(p, "args_digest", b.ArgsDigest)
	case SignalResolve:
		if err := needString(p, "operation", b.Operation); err != nil {
			return err
		}
		return needOneOf(p, "outcome", b.Outcome, []string{OutcomeApplied, OutcomeNotApplied})
	}
	return optDigest(p, "args_digest", b.ArgsDigest)
}

// TaskGenerationStarted (task.generation) starts a new task generation, e.g.
// after a steer. Completion evidence from older generations is stale.
type TaskGenerationStarted struct {
	Generation  uint32 `msgpack:"generation"`
	Instruction string `msgpack:"instruction"`
	Control     string `msgpack:"control,omitempty"` // the control ID that caused it
}

// Kind implements Body.
func (TaskGenerationStarted) Kind() Kind { return KindTaskGeneration }

func (b TaskGenerationStarted) validate(p string) error {
	if err := needPositive(p, "generation", b.Generation); err != nil {
		return err
	}
	return needString(p, "instruction", b.Instruction)
}

// RunStatus is how a run ended. A run ending is not a task being done and not
// a passing grade: those are separate facts.
type RunStatus string

// Run statuses.
const (
	RunDone       RunStatus = "done"
	RunBlocked    RunStatus = "blocked"
	RunIncomplete RunStatus = "incomplete"
	RunExhausted  RunStatus = "exhausted"
	RunCancelled  RunStatus = "cancelled"
	RunNeedsHuman RunStatus = "needs_human"
	RunErrored    RunStatus = "errored"
)

var runStatuses = []RunStatus{RunDone, RunBlocked, RunIncomplete, RunExhausted, RunCancelled, RunNeedsHuman, RunErrored}

// RunStatuses lists every run status, in the order docs/facts.md's endings
// table maps them to the terminal contract.
func RunStatuses() []RunStatus { return slices.Clone(runStatuses) }

// RunEnded (run.ended) is a run's terminal fact and its handoff packet.
type RunEnded struct {
	Status       RunStatus     `msgpack:"status"`
	Reason       string        `msgpack:"reason"`
	Spent        Spent         `msgpack:"spent"`
	Steps        uint32        `msgpack:"steps"`
	LastEvidence []EvidenceRef `msgpack:"last_evidence"`
	NextAction   string        `msgpack:"next_action,omitempty"`
}

// Kind implements Body.
func (RunEnded) Kind() Kind { return KindRunEnded }

func (b RunEnded) validate(p string) error {
	if err := needOneOf(p, "status", b.Status, runStatuses); err != nil {
		return err
	}
	if err := needString(p, "reason", b.Reason); err != nil {
		return err
	}
	return eachString(p, "last_evidence", b.LastEvidence)
}

// CandidateSealed (candidate.sealed) fixes the final workspace snapshot the
// grader reads; the snapshot is a blob named by its digest.
type CandidateSealed struct {
	SnapshotDigest Digest `msgpack:"snapshot_digest"`
	FixtureDigest  Digest `msgpack:"fixture_digest,omitempty"`
	Files          uint32 `msgpack:"files"`
}

// Kind implements Body.
func (CandidateSealed) Kind() Kind { return KindCandidateSealed }

func (b CandidateSealed) validate(p string) error {
	if err := needDigest(p, "snapshot_digest", b.SnapshotDigest); err != nil {
		return err
	}
	return optDigest(p, "fixture_digest", b.FixtureDigest)
}
