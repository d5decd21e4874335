package step

import (
	"fmt"
	"slices"

	"github.com/factline/factline/events"
)

// turnMessages are the messages one turn contributed, kept together: a
// tool message must follow the assistant message that made its call.
type turnMessages struct {
	turn     uint32
	msgs     []Message
	keep     bool // a call to a kept tool: a window keeps the whole turn
	feedback []Message
}

// History rebuilds the model-visible context of a run from its facts under a
// context policy: the system prompt, the instruction, every turn's reply and
// observations, harness feedback and steers. A window keeps the system prompt,
// the instruction, every steer, the last WindowTurns turns and turns that
// called a kept tool; a token bound drops the oldest droppable turns and
// fails visibly when what must be kept does not fit. It is a pure function of
// its inputs: the same facts always give the same context.
//
// The system prompt is the run's, as its case and treatment render it
// (cases.SystemPrompt): a parameter, never read here, so that the same
// facts and prompt give the same context on any runner.
func History(system, instruction string, facts []events.Fact, policy ContextPolicy) ([]Message, int, error) {
	head := []Message{{Role: RoleSystem, Content: system}, {Role: RoleUser, Content: instruction}}
	var steers []int // indexes into turns where a steer precedes the turn
	var turns []*turnMessages
	byTurn := map[uint32]*turnMessages{}
	get := func(n uint32) *turnMessages {
		if t := byTurn[n]; t != nil {
			return t
		}
		t := &turnMessages{turn: n}
		byTurn[n] = t
		turns = append(turns, t)
		return t
	}
	var pendingSteer []Message
	for _, f := range facts {
		switch b := f.Body.(type) {
		case events.TaskGenerationStarted:
			if b.Generation > 1 {
				pendingSteer = append(pendingSteer, Message{Role: RoleUser,
					Content: fmt.Sprintf("[steer: task generation %d] %s", b.Generation, b.Instruction)})
			}
		case events.TurnStarted:
			// A steer joins the context of the first turn started after
			// it: one taken in while a turn ran comes after that turn,
			// whose model never saw it.
			t := get(b.Turn)
			if len(pendingSteer) > 0 {
				t.msgs = append(t.msgs, pendingSteer...)
				steers = append(steers, len(turns)-1)
				pendingSteer = nil
			}
		case events.ModelReplied:
			t := get(b.Turn)
			calls := make([]ToolCall, len(b.Calls))
			for i, c := range b.Calls {
				calls[i] = ToolCall{ID: string(c.ID), Name: c.Name, Args: c.Args}
				if slices.Contains(policy.KeepTools, c.Name) {
					t.keep = true
				}
			}
			t.msgs = append(t.msgs, Message{Role: RoleAssistant, Content: b.Text, ToolCalls: calls})
		case events.DispatchCompleted:
			t := get(b.Turn)
			ref := b.Dispatch.EvidenceRef
			t.msgs = append(t.msgs, Message{Role: RoleTool, ToolCallID: string(b.Dispatch.CallID),
				Content: fmt.Sprintf("[evidence %s] %s", ref, b.Output)})
		case events.StallObserved:
			if a := b.Observation.Action; a != nil {
				if r, ok := a.Variant().(events.StallRetry); ok {
					get(b.Turn).feedback = append(get(b.Turn).feedback, Message{Role: RoleUser,
						Content: "[harness] " + r.Feedback})
				}
			}
		case events.StopDecided:
			if c, ok := b.Decision.Result.Variant().(events.StopContinue); ok && c.Feedback != "" {
				t := get(b.Decision.Turn)
				t.feedback = append(t.feedback, Message{Role: RoleUser, Content: "[harness] " + c.Feedback})
			}
		}
	}
	// A steer with no reply after it yet belongs to the next turn's context.
	tail := pendingSteer

	keep := make([]bool, len(turns))
	for i, t := range turns {
		switch {
		case policy.Mode != ContextWindow:
			keep[i] = true
		case t.keep || slices.Contains(steers, i) || i >= len(turns)-policy.WindowTurns:
			keep[i] = true
		}
	}
	build := func(include func(i int) bool) []Message {
		out := slices.Clone(head)
		for i, t := range turns {
			if include(i) {
				out = append(out, t.msgs...)
				out = append(out, t.feedback...)
			}
		}
		return append(out, tail...)
	}
	msgs := build(func(i int) bool { return keep[i] })
	tokens := EstimateTokens(msgs)
	if policy.MaxTokens <= 0 || tokens <= policy.MaxTokens {
		return msgs, tokens, nil
	}
	if policy.Mode == ContextWindow {
		// Drop the oldest turns a window may drop, most recent last, until
		// the context fits; the newest turn and kept turns stay.
		dropped := make([]bool, len(turns))
		for i := range turns {
			if tokens <= policy.MaxTokens {
				break
			}
			if turns[i].keep || slices.Contains(steers, i) || i == len(turns)-1 || !keep[i] {
				continue
			}
			dropped[i] = true
			msgs = build(func(j int) bool { return keep[j] && !dropped[j] })
			tokens = EstimateTokens(msgs)
		}
		if tokens <= policy.MaxTokens {
			return msgs, tokens, nil
		}
	}
	return nil, tokens, &ContextError{Need: tokens, Budget: policy.MaxTokens, Mode: policy.Mode}
}

// ContextError says the context budget cannot hold what the policy must
// keep. The run ends visibly; nothing required is dropped in silence.
type ContextError struct {
	Need, Budget int
	Mode         string
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("context budget too small: the %s policy must keep about %d tokens, the budget is %d", e.Mode, e.Need, e.Budget)
}

// EstimateTokens estimates the tokens of a context: a quarter of its bytes
// plus a few per message. It is only used for budgets and windows, never
// charged as usage.
func EstimateTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += 4 + len(m.Content)/4
		for _, c := range m.ToolCalls {
			n += 4 + (len(c.Name)+len(c.Args))/4
		}
	}
	return n
}
