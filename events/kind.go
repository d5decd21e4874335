package events

import "slices"

// Kind names a fact kind. It is the tail of the fact's subject
// (fact.<suite>.<run>.<kind>), so it is made of dot-separated tokens.
type Kind string

// Every fact kind factline knows. docs/facts.md describes each.
const (
	KindSuiteSubmitted   Kind = "suite.submitted"
	KindRunRequested     Kind = "run.requested"
	KindRunClaimed       Kind = "run.claimed"
	KindTurnStarted      Kind = "turn.started"
	KindModelReplied     Kind = "model.replied"
	KindDispatchIntended Kind = "dispatch.intended"
	KindDispatchComplete Kind = "dispatch.completed"
	KindTurnCompleted    Kind = "turn.completed"
	KindStallObserved    Kind = "stall.observed"
	KindStopDecided      Kind = "stop.decided"
	KindControlAccepted  Kind = "control.accepted"
	KindTaskGeneration   Kind = "task.generation"
	KindRunEnded         Kind = "run.ended"
	KindCandidateSealed  Kind = "candidate.sealed"
	KindGradeInstrument  Kind = "grade.instrument"
	KindGradeVerdict     Kind = "grade.verdict"
	KindGradeConflict    Kind = "grade.conflict"
	KindSuiteReported    Kind = "suite.reported"
	KindSuiteStopped     Kind = "suite.stopped"
	// KindSuiteControlled is an operator's pause, resume, drain or
	// cancel of a whole suite, accepted.
	KindSuiteControlled Kind = "suite.controlled"
	// KindContextSummarised is a condenser's summary (context policy
	// summarise), committed before the turn that sees it.
	KindContextSummarised Kind = "context.summarised"
)

// Owner is the service role allowed to emit a kind.
type Owner string

// The owners of fact kinds. Submitter is whoever submits a suite (the CLI).
const (
	OwnerSubmitter Owner = "submitter"
	OwnerRunner    Owner = "runner"
	OwnerStaller   Owner = "staller"
	OwnerDecider   Owner = "decider"
	OwnerGrader    Owner = "grader"
	OwnerMeter     Owner = "meter"
)

// kindSpec is the registry entry of one kind.
type kindSpec struct {
	version uint16     // current schema version; a change of meaning bumps it
	owner   Owner      // the only role that may emit it
	scope   scope      // run-scoped or suite-scoped
	new     func() any // a pointer to a zero body, for decoding
}

type scope int

const (
	runScope   scope = iota
	suiteScope       // the fact's run token is SuiteScope
)

var kinds = map[Kind]kindSpec{
	KindSuiteSubmitted:   {1, OwnerSubmitter, suiteScope, func() any { return new(SuiteSubmitted) }},
	KindRunRequested:     {1, OwnerMeter, runScope, func() any { return new(RunRequested) }},
	KindRunClaimed:       {1, OwnerRunner, runScope, func() any { return new(RunClaimed) }},
	KindTurnStarted:      {1, OwnerRunner, runScope, func() any { return new(TurnStarted) }},
	KindModelReplied:     {1, OwnerRunner, runScope, func() any { return new(ModelReplied) }},
	KindDispatchIntended: {1, OwnerRunner, runScope, func() any { return new(DispatchIntended) }},
	KindDispatchComplete: {1, OwnerRunner, runScope, func() any { return new(DispatchCompleted) }},
	KindTurnCompleted:    {1, OwnerRunner, runScope, func() any { return new(TurnCompleted) }},
	KindStallObserved:    {1, OwnerStaller, runScope, func() any { return new(StallObserved) }},
	KindStopDecided:      {1, OwnerDecider, runScope, func() any { return new(StopDecided) }},
	// Version 2 added the resolve signal: a version-1 reader cannot know it.
	KindControlAccepted: {2, OwnerRunner, runScope, func() any { return new(ControlAccepted) }},
	KindTaskGeneration:  {1, OwnerRunner, runScope, func() any { return new(TaskGenerationStarted) }},
	KindRunEnded:        {1, OwnerRunner, runScope, func() any { return new(RunEnded) }},
	KindCandidateSealed: {1, OwnerRunner, runScope, func() any { return new(CandidateSealed) }},
	KindGradeInstrument: {1, OwnerGrader, runScope, func() any { return new(GradeInstrument) }},
	KindGradeVerdict:    {1, OwnerGrader, runScope, func() any { return new(GradeVerdict) }},
	KindGradeConflict:   {1, OwnerGrader, runScope, func() any { return new(GradeConflict) }},
	KindSuiteReported:   {1, OwnerMeter, suiteScope, func() any { return new(SuiteReported) }},
	KindSuiteStopped:    {1, OwnerMeter, suiteScope, func() any { return new(SuiteStopped) }},
	// The submitter role submits a suite and controls it.
	KindSuiteControlled:   {1, OwnerSubmitter, suiteScope, func() any { return new(SuiteControlled) }},
	KindContextSummarised: {1, OwnerRunner, runScope, func() any { return new(ContextSummarised) }},
}

// Kinds returns every known kind, sorted.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Known reports whether k is a kind this version knows.
func (k Kind) Known() bool { _, ok := kinds[k]; return ok }

// Version returns the current schema version of k (0 if unknown).
func (k Kind) Version() uint16 { return kinds[k].version }

// Owner returns the role that emits k ("" if unknown).
func (k Kind) Owner() Owner { return kinds[k].owner }

// SuiteScoped reports whether facts of kind k belong to a suite rather than
// to one run; their run token is SuiteScope.
func (k Kind) SuiteScoped() bool { return kinds[k].scope == suiteScope }
