package step

import (
	"testing"

	"github.com/factline/factline/events"
)

// A run's facts say where it stands at every boundary a runner can die
// at, and what a takeover does next (docs/resume.md, "Taking a run over").
func TestProgressAtEveryBoundary(t *testing.T) {
	args := `{"path":"a.txt"}`
	call := events.ToolCall{ID: "c1", Name: "write_file", Args: args, ArgsDigest: events.DigestOf([]byte(args))}
	decided := func(turn uint32, r events.StopResult) events.StopDecided {
		return events.StopDecided{Decision: events.StopDecision{DecisionID: "d", Turn: turn, TaskGeneration: 1, Result: r}}
	}
	finish := func(s events.FinishStatus) events.StopDecided {
		return decided(1, events.Finish(events.StopFinish{Status: s, Reason: "because " + string(s)}))
	}
	run := []events.Body{
		events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("r1")), Reserve: 3},
		events.ModelReplied{Turn: 1, Provider: "scripted", Calls: []events.ToolCall{call}},
		events.DispatchIntended{Turn: 1, CallID: "c1", Tool: "write_file", OperationID: "r1/t1/c1", ArgsDigest: call.ArgsDigest, Effect: events.EffectWrite},
		events.DispatchCompleted{Turn: 1, Output: "{}", Dispatch: events.CompletedDispatch{CallID: "c1", EvidenceRef: "t1/c1",
			Tool: "write_file", Disposition: events.DispositionExecuted, Mutation: events.MutationApplied,
			Verification: events.NotVerifier(), Digest: events.DigestOf([]byte("ws"))}},
		events.TurnCompleted{Evidence: events.RunEvidence{RunID: "r1", TaskGeneration: 1, Turn: 1, EvidencePosition: 5,
			ActorIntent: events.Continue()}},
	}
	for _, c := range []struct {
		name   string
		bodies []events.Body
		want   Action
		end    Ending
	}{
		{"no turn", nil, StartTurn, Ending{}},
		{"turn.started", run[:1], AskModel, Ending{}},
		{"model.replied", run[:2], FinishTurn, Ending{}},
		{"dispatch.intended", run[:3], FinishTurn, Ending{}},
		{"dispatch.completed", run[:4], FinishTurn, Ending{}},
		{"turn.completed", run, AwaitDecision, Ending{}},
		{"continue", append(run[:5:5], decided(1, events.ContinueWith("go on"))), StartTurn, Ending{}},
		{"done", append(run[:5:5], finish(events.FinishDone)), End, Ending{events.RunDone, "because done"}},
		{"blocked", append(run[:5:5], finish(events.FinishBlocked)), End, Ending{events.RunBlocked, "because blocked"}},
		{"incomplete", append(run[:5:5], finish(events.FinishIncomplete)), End, Ending{events.RunIncomplete, "because incomplete"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ReadProgress(factsOf(t, c.bodies...))
			if got, end := p.Next(); got != c.want || end != c.end {
				t.Errorf("next %d %+v, want %d %+v", got, end, c.want, c.end)
			}
		})
	}

	p := ReadProgress(factsOf(t, run[:4]...))
	if p.Turn != 1 || p.StartedAt != 0 || p.Started.Reserve != 3 || len(p.Replied.Calls) != 1 ||
		p.Intended["c1"].OperationID != "r1/t1/c1" || p.Completed["c1"].Dispatch.EvidenceRef != "t1/c1" {
		t.Errorf("the turn as read: %+v", p)
	}
	if p.Epoch != 2 || p.Digest != events.DigestOf([]byte("ws")) || p.Gen != 1 || p.TurnGen != 1 {
		t.Errorf("an applied change is one more epoch and the settled workspace: %+v", p)
	}
}

// A steer's generation is the run's; a turn started after it belongs to
// it, and a person's decision on a call is kept by call.
func TestProgressFollowsGenerationsAndApprovals(t *testing.T) {
	facts := factsOf(t,
		events.TaskGenerationStarted{Generation: 2, Instruction: "steer"},
		events.TurnStarted{Turn: 1, ContextDigest: events.DigestOf([]byte("r1")), Reserve: 1},
		events.ControlAccepted{Control: events.ControlRef{ID: "a1", Signal: events.SignalApprove}, CallID: "c1",
			ArgsDigest: events.DigestOf([]byte("{}"))},
	)
	p := ReadProgress(facts)
	if p.Gen != 2 || p.TurnGen != 2 || p.StartedAt != 1 || p.Approvals["c1"] != events.SignalApprove {
		t.Errorf("progress %+v", p)
	}
}
