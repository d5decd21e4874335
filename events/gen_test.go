package events_test

import (
	"encoding/hex"
	"maps"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"pgregory.net/rapid"

	"github.com/factline/factline/events"
)

// Generators of valid facts, one per body kind and one per union variant.
//
// Every generator respects the rules NewFact enforces, so a generated fact
// always validates. Two conventions keep reflect.DeepEqual meaningful after
// a wire round trip: a slice of length 0 is nil (the wire's nil), and a time
// is time.Unix(sec, nsec).UTC() (no monotonic reading, UTC location).

// nilIfEmpty returns nil for an empty slice.
func nilIfEmpty[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

// sliceOf draws 0..maxLen elements; 0 elements is a nil slice.
func sliceOf[E any](g *rapid.Generator[E], maxLen int) *rapid.Generator[[]E] {
	return rapid.Custom(func(t *rapid.T) []E {
		return nilIfEmpty(rapid.SliceOfN(g, 0, maxLen).Draw(t, "items"))
	})
}

// someOf draws 1..maxLen elements.
func someOf[E any](g *rapid.Generator[E], maxLen int) *rapid.Generator[[]E] {
	return rapid.SliceOfN(g, 1, maxLen)
}

// typed converts a string generator into one of a named string type.
func typed[T ~string](g *rapid.Generator[string]) *rapid.Generator[T] {
	return rapid.Map(g, func(s string) T { return T(s) })
}

// oneOfVariants draws from the variant generators of a union, in a fixed
// order so that rapid's shrinking and replay are deterministic.
func oneOfVariants[V any](m map[string]*rapid.Generator[V]) *rapid.Generator[V] {
	gens := make([]*rapid.Generator[V], 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		gens = append(gens, m[name])
	}
	return rapid.OneOf(gens...)
}

// Scalars.
var (
	genText    = rapid.StringN(1, 24, -1) // required strings: any unicode, never empty
	genOptText = rapid.StringN(0, 24, -1) // optional strings: may be ""
	genDigest  = rapid.Custom(func(t *rapid.T) events.Digest {
		sum := rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "sha256")
		return events.Digest("sha256:" + hex.EncodeToString(sum))
	})
	genOptDigest = rapid.OneOf(rapid.Just(events.Digest("")), genDigest)
	genULID      = rapid.Custom(func(t *rapid.T) ulid.ULID {
		var id ulid.ULID
		if err := id.SetTime(rapid.Uint64Range(1, ulid.MaxTime()).Draw(t, "ms")); err != nil {
			t.Fatalf("ulid time: %v", err)
		}
		if err := id.SetEntropy(rapid.SliceOfN(rapid.Byte(), 10, 10).Draw(t, "entropy")); err != nil {
			t.Fatalf("ulid entropy: %v", err)
		}
		return id
	})
	// genTime spans all three msgpack timestamp encodings (32, 64 and 96
	// bits, the last for times before 1970) and stays clear of time.Time's
	// zero value, which Validate refuses.
	genTime = rapid.Custom(func(t *rapid.T) time.Time {
		sec := rapid.Int64Range(-(1<<34), 1<<36).Draw(t, "sec")
		nsec := rapid.Int64Range(0, 999_999_999).Draw(t, "nsec")
		return time.Unix(sec, nsec).UTC()
	})
	genSuite = rapid.StringMatching(`[A-Za-z0-9_-]{1,40}`)
	genRunID = rapid.StringMatching(`[A-Za-z0-9-][A-Za-z0-9_-]{0,40}`)

	genEvidenceRef  = typed[events.EvidenceRef](genText)
	genRequirement  = typed[events.RequirementID](genText)
	genCallID       = typed[events.CallID](genText)
	genInstrumentID = typed[events.InstrumentID](genText)
)

// Union variants, keyed by wire name. The coverage test checks that each
// union's map names exactly the variants its decoder admits.
var (
	intentGens = map[string]*rapid.Generator[events.ActorIntent]{
		"continue": rapid.Just(events.Continue()),
		"propose_done": rapid.Custom(func(t *rapid.T) events.ActorIntent {
			return events.ProposeDone(sliceOf(genEvidenceRef, 4).Draw(t, "evidence")...)
		}),
		"report_blocked": rapid.Custom(func(t *rapid.T) events.ActorIntent {
			return events.ReportBlocked(genText.Draw(t, "reason"), sliceOf(genRequirement, 4).Draw(t, "unmet")...)
		}),
	}
	verificationGens = map[string]*rapid.Generator[events.Verification]{
		"not_verifier": rapid.Just(events.NotVerifier()),
		"not_run":      rapid.Just(events.NotRun()),
		"pending":      rapid.Just(events.VerificationPending()),
		"passed":       rapid.Map(rapid.Uint64(), events.Passed),
		"failed": rapid.Custom(func(t *rapid.T) events.Verification {
			return events.Failed(rapid.Uint64().Draw(t, "source_epoch"), rapid.Bool().Draw(t, "complete"),
				sliceOf(genDiagnostic, 3).Draw(t, "diagnostics")...)
		}),
		"unknown": rapid.Map(genText, events.VerificationUnknown),
	}
	stopGens = map[string]*rapid.Generator[events.StopResult]{
		"continue": rapid.Custom(func(t *rapid.T) events.StopResult {
			return events.ContinueWith(genOptText.Draw(t, "feedback"), sliceOf(genRequirement, 3).Draw(t, "unmet")...)
		}),
		"finish": rapid.Custom(func(t *rapid.T) events.StopResult {
			f := events.StopFinish{
				Status:    rapid.SampledFrom([]events.FinishStatus{events.FinishDone, events.FinishBlocked, events.FinishIncomplete}).Draw(t, "status"),
				Supported: sliceOf(genRequirement, 3).Draw(t, "supported"),
				Evidence:  sliceOf(genEvidenceRef, 3).Draw(t, "evidence"),
				Reason:    genText.Draw(t, "reason"),
			}
			if f.Status != events.FinishDone { // done never leaves requirements unmet
				f.Unmet = sliceOf(genRequirement, 3).Draw(t, "unmet")
			}
			return events.Finish(f)
		}),
	}
	stallGens = map[string]*rapid.Generator[events.StallAction]{
		"retry": rapid.Custom(func(t *rapid.T) events.StallAction {
			return events.Retry(events.StallRetry{
				Cause:     genText.Draw(t, "cause"),
				Feedback:  genText.Draw(t, "feedback"),
				Remaining: rapid.Uint32().Draw(t, "remaining"),
			})
		}),
		"escalate": rapid.Custom(func(t *rapid.T) events.StallAction {
			return events.Escalate(events.StallEscalate{
				Cause:    genText.Draw(t, "cause"),
				Target:   genText.Draw(t, "target"),
				Evidence: sliceOf(genEvidenceRef, 3).Draw(t, "evidence"),
			})
		}),
		"stop": rapid.Custom(func(t *rapid.T) events.StallAction {
			return events.StopStall(events.StallStop{
				Cause:    genText.Draw(t, "cause"),
				Unmet:    sliceOf(genRequirement, 3).Draw(t, "unmet"),
				Evidence: sliceOf(genEvidenceRef, 3).Draw(t, "evidence"),
			})
		}),
	}
	verdictGens = map[string]*rapid.Generator[events.VerdictResult]{
		"passed": rapid.Just(events.VerdictOK()),
		"failed": rapid.Just(events.VerdictFail()),
		"pending": rapid.Custom(func(t *rapid.T) events.VerdictResult {
			return events.VerdictWaiting(someOf(genInstrumentID, 3).Draw(t, "instruments")...)
		}),
		"invalid":   rapid.Map(genText, events.VerdictNoAnswer),
		"abstained": rapid.Map(genText, events.VerdictAbstain),
	}

	genIntent       = oneOfVariants(intentGens)
	genVerification = oneOfVariants(verificationGens)
	genStopResult   = oneOfVariants(stopGens)
	genStallAction  = oneOfVariants(stallGens)
	genVerdict      = oneOfVariants(verdictGens)
)

// Nested values.
var (
	genRef = rapid.Custom(func(t *rapid.T) events.Ref {
		return events.Ref{ID: genText.Draw(t, "id"), Digest: genDigest.Draw(t, "digest")}
	})
	genDiagnostic = rapid.Custom(func(t *rapid.T) events.Diagnostic {
		return events.Diagnostic{
			Message: genText.Draw(t, "message"),
			File:    genOptText.Draw(t, "file"),
			Line:    rapid.Uint32().Draw(t, "line"),
			Code:    genOptText.Draw(t, "code"),
		}
	})
	genUsage = rapid.Custom(func(t *rapid.T) events.Usage {
		return events.Usage{
			InputTokens:  rapid.Uint64().Draw(t, "input_tokens"),
			OutputTokens: rapid.Uint64().Draw(t, "output_tokens"),
			Cost:         rapid.Ptr(rapid.Uint64(), true).Draw(t, "cost"),
		}
	})
	genToolCall = rapid.Custom(func(t *rapid.T) events.ToolCall {
		return events.ToolCall{
			ID:         genCallID.Draw(t, "id"),
			Name:       genText.Draw(t, "name"),
			Args:       genOptText.Draw(t, "args"),
			ArgsDigest: genDigest.Draw(t, "args_digest"),
		}
	})
	genControlRef = rapid.Custom(func(t *rapid.T) events.ControlRef {
		return events.ControlRef{
			ID:     genText.Draw(t, "id"),
			Signal: rapid.SampledFrom(allSignals).Draw(t, "signal"),
		}
	})
	genCompletedDispatch = rapid.Custom(func(t *rapid.T) events.CompletedDispatch {
		return events.CompletedDispatch{
			CallID:       genCallID.Draw(t, "call_id"),
			EvidenceRef:  genEvidenceRef.Draw(t, "evidence_ref"),
			Disposition:  rapid.SampledFrom(allDispositions).Draw(t, "disposition"),
			Mutation:     rapid.SampledFrom(allMutations).Draw(t, "mutation"),
			Verification: genVerification.Draw(t, "verification"),
			Outcome:      rapid.SampledFrom(allEffectOutcomes).Draw(t, "outcome"),
		}
	})
	genInstrumentResult = rapid.Custom(func(t *rapid.T) events.InstrumentResult {
		return events.InstrumentResult{
			Instrument: genInstrumentID.Draw(t, "instrument"),
			Version:    genText.Draw(t, "version"),
			Required:   rapid.Bool().Draw(t, "required"),
			Outcome:    rapid.SampledFrom(allOutcomes).Draw(t, "outcome"),
			Detail:     genOptText.Draw(t, "detail"),
			Evidence:   sliceOf(genEvidenceRef, 3).Draw(t, "evidence"),
		}
	})
	genVeto = rapid.Custom(func(t *rapid.T) events.GradeVeto {
		return events.GradeVeto{
			Instrument:  genInstrumentID.Draw(t, "instrument"),
			Requirement: genRequirement.Draw(t, "requirement"),
			Reason:      genText.Draw(t, "reason"),
			Evidence:    sliceOf(genEvidenceRef, 3).Draw(t, "evidence"),
			Binding:     rapid.Bool().Draw(t, "binding"),
		}
	})
)

// The closed enumerations, as the package defines them.
var (
	allSignals        = []events.Signal{events.SignalCancel, events.SignalSteer, events.SignalApprove, events.SignalReject}
	allDispositions   = []events.Disposition{events.DispositionExecuted, events.DispositionRejected, events.DispositionDeferred, events.DispositionCanceled, events.DispositionNotRun}
	allEffectOutcomes = []string{"", events.OutcomeApplied, events.OutcomeNotApplied, events.OutcomeUnknown}
	allMutations      = []events.Mutation{events.MutationApplied, events.MutationUnchanged, events.MutationNotApplied, events.MutationNotApplicable}
	allOutcomes       = []events.InstrumentOutcome{events.InstrumentPassed, events.InstrumentFailed, events.InstrumentErrored, events.InstrumentNotRun, events.InstrumentAbstained}
	allEffects        = []events.EffectClass{events.EffectRead, events.EffectWrite, events.EffectExternal, events.EffectIrreversible}
	allRunStatuses    = []events.RunStatus{events.RunDone, events.RunBlocked, events.RunIncomplete, events.RunExhausted, events.RunCancelled, events.RunNeedsHuman, events.RunErrored}
)

// genComponents draws identity components sorted by name without repeats,
// as validation requires; none is a nil slice.
var genComponents = rapid.Custom(func(t *rapid.T) []events.Component {
	names := rapid.SliceOfNDistinct(genText, 0, 3, rapid.ID[string]).Draw(t, "names")
	slices.Sort(names)
	var out []events.Component
	for _, n := range names {
		out = append(out, events.Component{Name: n, Value: genOptText.Draw(t, "value")})
	}
	return out
})

// genExtensions draws the extension records of a claim.
var genExtensions = sliceOf(rapid.Custom(func(t *rapid.T) events.Extension {
	return events.Extension{
		Name:       genText.Draw(t, "name"),
		Command:    genText.Draw(t, "command"),
		Args:       sliceOf(genText, 3).Draw(t, "args"),
		Executable: genDigest.Draw(t, "executable"),
		Server:     genOptText.Draw(t, "server"),
		Version:    genOptText.Draw(t, "version"),
		Protocol:   genOptText.Draw(t, "protocol"),
		Tools: sliceOf(rapid.Custom(func(t *rapid.T) events.ExtensionTool {
			return events.ExtensionTool{
				Name:     genText.Draw(t, "tool"),
				Effect:   rapid.SampledFrom(allEffects).Draw(t, "effect"),
				Approval: rapid.SampledFrom([]string{events.ApprovalNever, events.ApprovalAlways}).Draw(t, "approval"),
			}
		}), 3).Draw(t, "tools"),
		Withheld: sliceOf(genText, 2).Draw(t, "withheld"),
	}
}), 2)

// body wraps a body constructor as a generator of events.Body.
func body[B events.Body](fn func(t *rapid.T) B) *rapid.Generator[events.Body] {
	return rapid.Custom(func(t *rapid.T) events.Body { return fn(t) })
}

// bodyGens has one generator per kind. TestGeneratorsCoverEveryKind fails
// when a kind has none.
var bodyGens = map[events.Kind]*rapid.Generator[events.Body]{
	events.KindSuiteSubmitted: body(func(t *rapid.T) events.SuiteSubmitted {
		return events.SuiteSubmitted{
			Name:          genText.Draw(t, "name"),
			SpecDigest:    genDigest.Draw(t, "spec_digest"),
			Cases:         someOf(genRef, 3).Draw(t, "cases"),
			Treatments:    someOf(genRef, 3).Draw(t, "treatments"),
			Trials:        rapid.Uint32Min(1).Draw(t, "trials"),
			Required:      sliceOf(genInstrumentID, 3).Draw(t, "required"),
			Split:         genOptText.Draw(t, "split"),
			ValidOutcomes: sliceOf(rapid.SampledFrom(allRunStatuses), 3).Draw(t, "valid_outcomes"),
		}
	}),
	events.KindRunRequested: body(func(t *rapid.T) events.RunRequested {
		return events.RunRequested{
			Case:            genText.Draw(t, "case"),
			CaseDigest:      genDigest.Draw(t, "case_digest"),
			Treatment:       genText.Draw(t, "treatment"),
			TreatmentDigest: genDigest.Draw(t, "treatment_digest"),
			Trial:           rapid.Uint32Min(1).Draw(t, "trial"),
			Budget: events.Budget{
				Steps:   rapid.Uint32().Draw(t, "steps"),
				Tokens:  rapid.Uint64().Draw(t, "tokens"),
				Seconds: rapid.Uint32().Draw(t, "seconds"),
				Cost:    rapid.Uint64().Draw(t, "cost"),
			},
			Identity:   genOptDigest.Draw(t, "identity"),
			Components: genComponents.Draw(t, "components"),
		}
	}),
	events.KindRunClaimed: body(func(t *rapid.T) events.RunClaimed {
		return events.RunClaimed{
			Runner:     genText.Draw(t, "runner"),
			Lease:      rapid.Uint32Min(1).Draw(t, "lease"),
			ResumeFrom: rapid.Uint64().Draw(t, "resume_from"),
			Extensions: genExtensions.Draw(t, "extensions"),
			Identity:   genOptDigest.Draw(t, "identity"),
			// The record inline is covered by the golden files; its
			// digest, which runners write instead, here.
			ContainmentDigest: genOptDigest.Draw(t, "containment_digest"),
		}
	}),
	events.KindTurnStarted: body(func(t *rapid.T) events.TurnStarted {
		return events.TurnStarted{
			Turn:          rapid.Uint32Min(1).Draw(t, "turn"),
			ContextDigest: genDigest.Draw(t, "context_digest"),
			Messages:      rapid.Uint32().Draw(t, "messages"),
			Policy:        genOptText.Draw(t, "policy"),
		}
	}),
	events.KindModelReplied: body(func(t *rapid.T) events.ModelReplied {
		calls := rapid.SliceOfNDistinct(genToolCall, 0, 4, func(c events.ToolCall) events.CallID { return c.ID })
		return events.ModelReplied{
			Turn:        rapid.Uint32Min(1).Draw(t, "turn"),
			Provider:    genText.Draw(t, "provider"),
			Model:       genOptText.Draw(t, "model"),
			Text:        genOptText.Draw(t, "text"),
			TextDigest:  genOptDigest.Draw(t, "text_digest"),
			Calls:       nilIfEmpty(calls.Draw(t, "calls")),
			Usage:       rapid.Ptr(genUsage, true).Draw(t, "usage"),
			Finish:      genOptText.Draw(t, "finish"),
			ReplyDigest: genOptDigest.Draw(t, "reply_digest"),
		}
	}),
	events.KindDispatchIntended: body(func(t *rapid.T) events.DispatchIntended {
		return events.DispatchIntended{
			Turn:        rapid.Uint32Min(1).Draw(t, "turn"),
			CallID:      genCallID.Draw(t, "call_id"),
			Tool:        genText.Draw(t, "tool"),
			OperationID: genText.Draw(t, "operation_id"),
			ArgsDigest:  genDigest.Draw(t, "args_digest"),
			Effect:      rapid.SampledFrom(allEffects).Draw(t, "effect"),
			Delegation: rapid.Ptr(rapid.Custom(func(t *rapid.T) events.Delegation {
				return events.Delegation{
					Run:          genRunID.Draw(t, "child_run"),
					Steps:        rapid.Uint32Min(1).Draw(t, "child_steps"),
					InputTokens:  rapid.Uint64().Draw(t, "child_input_tokens"),
					OutputTokens: rapid.Uint64().Draw(t, "child_output_tokens"),
					Cost:         rapid.Uint64().Draw(t, "child_cost"),
					WallMillis:   rapid.Uint64().Draw(t, "child_wall_millis"),
				}
			}), true).Draw(t, "delegation"),
		}
	}),
	events.KindDispatchComplete: body(func(t *rapid.T) events.DispatchCompleted {
		return events.DispatchCompleted{
			Turn:         rapid.Uint32Min(1).Draw(t, "turn"),
			Dispatch:     genCompletedDispatch.Draw(t, "dispatch"),
			Output:       genOptText.Draw(t, "output"),
			OutputDigest: genOptDigest.Draw(t, "output_digest"),
			Error: rapid.Ptr(rapid.Custom(func(t *rapid.T) events.ToolError {
				return events.ToolError{
					Code:      genText.Draw(t, "code"),
					Message:   genOptText.Draw(t, "message"),
					Retryable: rapid.Bool().Draw(t, "retryable"),
				}
			}), true).Draw(t, "error"),
			Child: rapid.Ptr(rapid.Custom(func(t *rapid.T) events.ChildOutcome {
				return events.ChildOutcome{
					Run:     genRunID.Draw(t, "child_run"),
					Status:  rapid.SampledFrom(events.RunStatuses()).Draw(t, "child_status"),
					Reason:  genText.Draw(t, "child_reason"),
					Answer:  genOptText.Draw(t, "child_answer"),
					Steps:   rapid.Uint32().Draw(t, "child_steps"),
					Usage:   rapid.Ptr(genUsage, true).Draw(t, "child_usage"),
					Charged: rapid.Uint64().Draw(t, "child_charged"),
				}
			}), true).Draw(t, "child"),
		}
	}),
	events.KindTurnCompleted: body(func(t *rapid.T) events.TurnCompleted {
		return events.TurnCompleted{Evidence: events.RunEvidence{
			RunID:            genRunID.Draw(t, "run_id"),
			TaskGeneration:   rapid.Uint32Min(1).Draw(t, "task_generation"),
			Turn:             rapid.Uint32Min(1).Draw(t, "turn"),
			EvidencePosition: rapid.Uint64Min(1).Draw(t, "evidence_position"),
			ActorIntent:      genIntent.Draw(t, "actor_intent"),
			Dispatches:       sliceOf(genCompletedDispatch, 3).Draw(t, "dispatches"),
			AcceptedControl:  rapid.Ptr(genControlRef, true).Draw(t, "accepted_control"),
		}}
	}),
	events.KindStallObserved: body(func(t *rapid.T) events.StallObserved {
		return events.StallObserved{
			Turn: rapid.Uint32Min(1).Draw(t, "turn"),
			Observation: events.StallObservation{
				Position: rapid.Uint64Min(1).Draw(t, "position"),
				Checkpoint: events.StallCheckpoint{
					Episode:     rapid.Uint32().Draw(t, "episode"),
					RepairsUsed: rapid.Uint32().Draw(t, "repairs_used"),
					WriteCredit: rapid.Uint32().Draw(t, "write_credit"),
					OpenFailure: rapid.Bool().Draw(t, "open_failure"),
					Signature:   genOptText.Draw(t, "signature"),
				},
				Action: rapid.Ptr(genStallAction, true).Draw(t, "action"),
			},
		}
	}),
	events.KindStopDecided: body(func(t *rapid.T) events.StopDecided {
		return events.StopDecided{Decision: events.StopDecision{
			DecisionID:     genText.Draw(t, "decision_id"),
			Turn:           rapid.Uint32Min(1).Draw(t, "turn"),
			TaskGeneration: rapid.Uint32Min(1).Draw(t, "task_generation"),
			Result:         genStopResult.Draw(t, "result"),
		}}
	}),
	events.KindControlAccepted: body(func(t *rapid.T) events.ControlAccepted {
		b := events.ControlAccepted{
			Control:     genControlRef.Draw(t, "control"),
			Instruction: genOptText.Draw(t, "instruction"),
			CallID:      typed[events.CallID](genOptText).Draw(t, "call_id"),
			ArgsDigest:  genOptDigest.Draw(t, "args_digest"),
			Reason:      genOptText.Draw(t, "reason"),
		}
		switch b.Control.Signal {
		case events.SignalSteer: // steer carries its instruction
			b.Instruction = genText.Draw(t, "steer_instruction")
		case events.SignalApprove, events.SignalReject: // the exact call, by its arguments
			b.CallID = genCallID.Draw(t, "decided_call_id")
			b.ArgsDigest = genDigest.Draw(t, "decided_args_digest")
		}
		return b
	}),
	events.KindRunDelegated: body(func(t *rapid.T) events.RunDelegated {
		return events.RunDelegated{
			Request: events.RunRequested{
				Case:            genText.Draw(t, "case"),
				CaseDigest:      genDigest.Draw(t, "case_digest"),
				Treatment:       genText.Draw(t, "treatment"),
				TreatmentDigest: genDigest.Draw(t, "treatment_digest"),
				Trial:           rapid.Uint32Min(1).Draw(t, "trial"),
				Budget:          events.Budget{Steps: rapid.Uint32().Draw(t, "steps"), Cost: rapid.Uint64().Draw(t, "cost")},
				Components:      genComponents.Draw(t, "components"),
			},
			Parent: events.ParentRef{
				Run:         genRunID.Draw(t, "parent_run"),
				Turn:        rapid.Uint32Min(1).Draw(t, "parent_turn"),
				CallID:      genCallID.Draw(t, "parent_call"),
				OperationID: genText.Draw(t, "parent_operation"),
			},
		}
	}),
	events.KindContextSummarised: body(func(t *rapid.T) events.ContextSummarised {
		from := rapid.Uint32Range(1, 1<<20).Draw(t, "from")
		through := rapid.Uint32Range(from, 1<<21).Draw(t, "through")
		return events.ContextSummarised{
			Turn:          rapid.Uint32Range(through+1, 1<<22).Draw(t, "turn"),
			From:          from,
			Through:       through,
			Summary:       genText.Draw(t, "summary"),
			RequestDigest: genDigest.Draw(t, "request_digest"),
			Provider:      genText.Draw(t, "provider"),
			Model:         genOptText.Draw(t, "model"),
			Usage:         rapid.Ptr(genUsage, true).Draw(t, "usage"),
			Reserve:       rapid.Uint64().Draw(t, "reserve"),
			Tokens:        rapid.Uint64().Draw(t, "tokens"),
		}
	}),
	events.KindTaskGeneration: body(func(t *rapid.T) events.TaskGenerationStarted {
		return events.TaskGenerationStarted{
			Generation:  rapid.Uint32Min(1).Draw(t, "generation"),
			Instruction: genText.Draw(t, "instruction"),
			Control:     genOptText.Draw(t, "control"),
		}
	}),
	events.KindRunEnded: body(func(t *rapid.T) events.RunEnded {
		return events.RunEnded{
			Status: rapid.SampledFrom(allRunStatuses).Draw(t, "status"),
			Reason: genText.Draw(t, "reason"),
			Spent: events.Spent{
				Steps:  rapid.Uint32().Draw(t, "steps"),
				Tokens: rapid.Ptr(rapid.Uint64(), true).Draw(t, "tokens"),
				Cost:   rapid.Ptr(rapid.Uint64(), true).Draw(t, "cost"),
				Millis: rapid.Uint64().Draw(t, "millis"),
			},
			Steps:        rapid.Uint32().Draw(t, "steps"),
			LastEvidence: sliceOf(genEvidenceRef, 3).Draw(t, "last_evidence"),
			NextAction:   genOptText.Draw(t, "next_action"),
		}
	}),
	events.KindCandidateSealed: body(func(t *rapid.T) events.CandidateSealed {
		return events.CandidateSealed{
			SnapshotDigest: genDigest.Draw(t, "snapshot_digest"),
			FixtureDigest:  genOptDigest.Draw(t, "fixture_digest"),
			Files:          rapid.Uint32().Draw(t, "files"),
		}
	}),
	events.KindGradeInstrument: body(func(t *rapid.T) events.GradeInstrument {
		return events.GradeInstrument{
			SnapshotDigest: genDigest.Draw(t, "snapshot_digest"),
			Result:         genInstrumentResult.Draw(t, "result"),
		}
	}),
	events.KindGradeVerdict: body(func(t *rapid.T) events.GradeVerdict {
		v := events.GraderVerdict{
			AttemptID:   genText.Draw(t, "attempt_id"),
			SnapshotID:  genDigest.Draw(t, "snapshot_id"),
			Revision:    rapid.Uint32Min(1).Draw(t, "revision"),
			Instruments: sliceOf(genInstrumentResult, 3).Draw(t, "instruments"),
			Vetoes:      sliceOf(genVeto, 3).Draw(t, "vetoes"),
			Result:      genVerdict.Draw(t, "result"),
		}
		if v.Result.Type() == "passed" { // a pass carries no binding veto
			for i := range v.Vetoes {
				v.Vetoes[i].Binding = false
			}
		}
		return events.GradeVerdict{Verdict: v}
	}),
	events.KindGradeConflict: body(func(t *rapid.T) events.GradeConflict {
		rev := rapid.Uint32Min(2).Draw(t, "revision")
		return events.GradeConflict{
			SnapshotDigest: genDigest.Draw(t, "snapshot_digest"),
			Revision:       rev,
			ConflictsWith:  rapid.Uint32Range(1, rev-1).Draw(t, "conflicts_with"),
			Instrument:     genInstrumentID.Draw(t, "instrument"),
			Reason:         genText.Draw(t, "reason"),
		}
	}),
	events.KindSuiteStopped: body(func(t *rapid.T) events.SuiteStopped {
		lo := rapid.Int32Range(-1000, 1000).Draw(t, "low")
		return events.SuiteStopped{
			Comparison: genText.Draw(t, "comparison"),
			Reason:     rapid.SampledFrom([]string{events.StopDifference, events.StopEquivalence}).Draw(t, "reason"),
			Pairs:      rapid.Uint32Range(1, 1<<20).Draw(t, "pairs"),
			Confidence: rapid.Uint32Range(1, 999).Draw(t, "confidence"),
			Low:        lo,
			High:       rapid.Int32Range(lo, 1000).Draw(t, "high"),
		}
	}),
	events.KindSuiteControlled: body(func(t *rapid.T) events.SuiteControlled {
		return events.SuiteControlled{
			ID:     genText.Draw(t, "id"),
			Action: rapid.SampledFrom(events.SuiteActions()).Draw(t, "action"),
			From:   genText.Draw(t, "from"),
			Reason: rapid.StringN(0, 40, -1).Draw(t, "reason"),
		}
	}),
	events.KindSuiteReported: body(func(t *rapid.T) events.SuiteReported {
		n := rapid.Uint32Range(0, 1<<28) // six of these cannot overflow uint32
		b := events.SuiteReported{
			ReportDigest: genDigest.Draw(t, "report_digest"),
			Passed:       n.Draw(t, "passed"),
			Failed:       n.Draw(t, "failed"),
			Pending:      n.Draw(t, "pending"),
			Invalid:      n.Draw(t, "invalid"),
			Abstained:    n.Draw(t, "abstained"),
			Excluded:     n.Draw(t, "excluded"),
		}
		b.Attempts = b.Passed + b.Failed + b.Pending + b.Invalid + b.Abstained + b.Excluded
		return b
	}),
}

// genMeta draws a valid envelope for kind k: suite-scoped kinds get
// SuiteScope and task generation 0, and the producer is the kind's owner.
func genMeta(k events.Kind) *rapid.Generator[events.Meta] {
	return rapid.Custom(func(t *rapid.T) events.Meta {
		m := events.Meta{
			Suite:    genSuite.Draw(t, "suite"),
			Run:      events.SuiteScope,
			Position: rapid.Uint64Min(1).Draw(t, "position"),
			Producer: events.Producer{Service: k.Owner(), Instance: genText.Draw(t, "instance")},
			At:       genTime.Draw(t, "at"),
		}
		if !k.SuiteScoped() {
			m.Run = genRunID.Draw(t, "run")
			m.TaskGeneration = rapid.Uint32Min(1).Draw(t, "task_generation")
		}
		if rapid.Bool().Draw(t, "has_causation") {
			m.Causation = genULID.Draw(t, "causation").String()
		}
		return m
	})
}

// genFactOf draws a valid fact of kind k, built through NewFact. The ID is
// drawn too, so that a failing case replays exactly.
func genFactOf(k events.Kind) *rapid.Generator[events.Fact] {
	return rapid.Custom(func(t *rapid.T) events.Fact {
		g, ok := bodyGens[k]
		if !ok {
			t.Fatalf("no body generator for %s", k)
		}
		b := g.Draw(t, "body")
		f, err := events.NewFact(genMeta(k).Draw(t, "meta"), b)
		if err != nil {
			t.Fatalf("generator made an invalid %s: %v", k, err)
		}
		f.ID = genULID.Draw(t, "id")
		return f
	})
}

// genFact draws a valid fact of any kind.
var genFact = rapid.Custom(func(t *rapid.T) events.Fact {
	return genFactOf(rapid.SampledFrom(events.Kinds()).Draw(t, "kind")).Draw(t, "fact")
})

// unionsOf names every union variant a body carries, as "Union/variant".
func unionsOf(b events.Body) []string {
	var out []string
	add := func(union, typ string) { out = append(out, union+"/"+typ) }
	switch b := b.(type) {
	case events.TurnCompleted:
		add("ActorIntent", b.Evidence.ActorIntent.Type())
		for _, d := range b.Evidence.Dispatches {
			add("Verification", d.Verification.Type())
		}
	case events.DispatchCompleted:
		add("Verification", b.Dispatch.Verification.Type())
	case events.StallObserved:
		if b.Observation.Action != nil {
			add("StallAction", b.Observation.Action.Type())
		}
	case events.StopDecided:
		add("StopResult", b.Decision.Result.Type())
	case events.GradeVerdict:
		add("VerdictResult", b.Verdict.Result.Type())
	}
	return out
}

// allUnionVariants is every "Union/variant" the package admits.
func allUnionVariants() []string {
	var out []string
	for union, names := range events.UnionVariants {
		for _, n := range names {
			out = append(out, union+"/"+n)
		}
	}
	slices.Sort(out)
	return out
}
