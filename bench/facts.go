package bench

import (
	"fmt"

	"github.com/factline/factline/events"
)

// turnKinds is the cycle of facts one turn of a run writes, in order: what
// a scripted turn with one tool call commits. Filling a stream with this
// cycle gives the kinds, sizes and mix of a real log.
const turnFacts = 7

// runFact returns the fact at position pos (1-based) of a run whose turns
// each write the turnFacts facts of a turn with one tool call.
func runFact(suite, run string, pos uint64) (events.Fact, error) {
	turn := uint32((pos-1)/turnFacts) + 1
	owner := events.OwnerRunner
	var body events.Body
	call := events.CallID(fmt.Sprintf("call-%d-1", turn))
	args := `{"dir":"."}`
	ref := events.EvidenceRef(fmt.Sprintf("%s/t%d/%s", run, turn, call))
	digest := events.DigestOf(fmt.Appendf(nil, "%s/%d", run, turn))
	switch (pos - 1) % turnFacts {
	case 0:
		body = events.TurnStarted{Turn: turn, ContextDigest: digest, Messages: 2*turn + 1, Policy: "full", Reserve: 10, Tokens: uint64(800 + 150*turn)}
	case 1:
		cost := uint64(1)
		body = events.ModelReplied{Turn: turn, Provider: "scripted", Model: "bench-agent",
			Text:   "Let me list the files of the workspace before I change anything.",
			Calls:  []events.ToolCall{{ID: call, Name: "list_files", Args: args, ArgsDigest: events.DigestOf([]byte(args))}},
			Usage:  &events.Usage{InputTokens: uint64(800 + 150*turn), OutputTokens: 40, Cost: &cost},
			Finish: "tool_calls"}
	case 2:
		body = events.DispatchIntended{Turn: turn, CallID: call, Tool: "list_files", OperationID: string(ref),
			ArgsDigest: events.DigestOf([]byte(args)), Effect: events.EffectRead}
	case 3:
		body = events.DispatchCompleted{Turn: turn, Dispatch: dispatch(call, ref, digest),
			Output: "README.md\ncalc.go\ncalc_test.go\ncheck.sh\ngo.mod\n"}
	case 4:
		body = events.TurnCompleted{Evidence: events.RunEvidence{RunID: run, TaskGeneration: 1, Turn: turn,
			EvidencePosition: pos, ActorIntent: events.Continue(), Dispatches: []events.CompletedDispatch{dispatch(call, ref, digest)}}}
	case 5:
		owner = events.OwnerStaller
		body = events.StallObserved{Turn: turn, Observation: events.StallObservation{Position: pos - 1,
			Checkpoint: events.StallCheckpoint{Episode: 1, Signature: string(digest)}}}
	case 6:
		owner = events.OwnerDecider
		id := fmt.Sprintf("%s/%d/stop", run, turn)
		body = events.StopDecided{Decision: events.StopDecision{DecisionID: id, Turn: turn, TaskGeneration: 1,
			Result: events.ContinueWith("", "tests")}}
	}
	return events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: pos,
		Producer: events.Producer{Service: owner, Instance: "bench-" + string(owner)}}, body)
}

func dispatch(call events.CallID, ref events.EvidenceRef, digest events.Digest) events.CompletedDispatch {
	return events.CompletedDispatch{CallID: call, EvidenceRef: ref, Disposition: events.DispositionExecuted,
		Mutation: events.MutationNotApplicable, Verification: events.NotVerifier(), Tool: "list_files", Digest: digest}
}

// turnCompleted is the fact B1 appends: a turn.completed with one executed
// dispatch, the size of a typical fact.
func turnCompleted(suite, run string, pos uint64) (events.Fact, error) {
	turn := uint32(pos)
	call := events.CallID(fmt.Sprintf("call-%d", turn))
	return events.NewFact(events.Meta{Suite: suite, Run: run, TaskGeneration: 1, Position: pos,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "bench-runner"}},
		events.TurnCompleted{Evidence: events.RunEvidence{RunID: run, TaskGeneration: 1, Turn: turn, EvidencePosition: pos,
			ActorIntent: events.Continue(),
			Dispatches: []events.CompletedDispatch{{CallID: call, EvidenceRef: events.EvidenceRef(fmt.Sprintf("%s/%s", run, call)),
				Disposition: events.DispositionExecuted, Mutation: events.MutationApplied,
				Verification: events.Failed(uint64(turn), true, events.Diagnostic{Message: "expected 2, got 3", File: "calc.go", Line: 12})}},
		}})
}
