package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/factline/factline/events"
)

// Delegate hands part of the task to a child run: another agent with its
// own instruction, the parent's permissions or fewer and a budget carved
// out of the parent's. Only a treatment that allows delegation offers it.
// Its contract is what the model sees and what the registry checks the
// arguments against; the runner itself carries a call out (it starts the
// child run on the bus and waits for its end), never Run.
type Delegate struct{}

// DelegateArgs are a delegate call's arguments.
type DelegateArgs struct {
	// Instruction is the child's task, as its model first reads it.
	Instruction string `json:"instruction"`
	// Tools, when given, are the built-in tools the child is offered: a
	// subset of the parent's (absent: the parent's, without delegate).
	Tools []string `json:"tools,omitempty"`
	// Budget, when given, is what the child may spend, carved out of the
	// parent's remaining budget (absent: half of what remains).
	Budget *DelegateBudget `json:"budget,omitempty"`
}

// DelegateBudget is the budget a delegate call asks for its child; a
// field left out takes the default share.
type DelegateBudget struct {
	Steps        uint32 `json:"steps,omitempty"`
	InputTokens  uint64 `json:"input_tokens,omitempty"`
	OutputTokens uint64 `json:"output_tokens,omitempty"`
	Cost         uint64 `json:"cost,omitempty"`
	WallSeconds  uint64 `json:"wall_seconds,omitempty"`
}

// CodeDelegationDenied settles a delegate call the runner refused before
// any child started: it asked for a tool the parent is not offered, or
// for more budget than the parent has left. The message names which.
const CodeDelegationDenied = "DELEGATION_DENIED"

// CodeChildUnfinished settles a delegate call whose child ended other than
// done (blocked, incomplete, exhausted, cancelled, errored, needs_human):
// the observation still carries its answer.
const CodeChildUnfinished = "CHILD_UNFINISHED"

// Contract implements Tool.
func (Delegate) Contract() Contract {
	return Contract{
		Name: "delegate",
		Description: "Hand part of the task to a child agent and wait for its answer. instruction is the child's task. " +
			"tools (optional) narrows the tools it may use to some of yours; budget (optional: steps, input_tokens, " +
			"output_tokens, cost, wall_seconds) is taken out of your own remaining budget, half of it when left out. " +
			"The child works on a copy of your workspace as it is now; its changes stay in its copy. The result is the " +
			"child's final answer and how it ended; what it spent is charged to your budget.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["instruction"],
"properties":{"instruction":{"type":"string","minLength":1},
"tools":{"type":"array","items":{"type":"string","minLength":1}},
"budget":{"type":"object","additionalProperties":false,"properties":{
"steps":{"type":"integer","minimum":1},"input_tokens":{"type":"integer","minimum":1},"output_tokens":{"type":"integer","minimum":1},
"cost":{"type":"integer","minimum":1},"wall_seconds":{"type":"integer","minimum":1}}}}}`),
		// A child reaches outside the parent's workspace: it is a run of
		// its own, which may make any effect the parent may.
		Effect: events.EffectExternal, Approval: ApprovalNever, Timeout: time.Hour,
		OutputCap: 16 << 10,
	}
}

// Run implements Tool. The runner carries a delegate call out itself; a
// registry that runs one says so instead of doing anything.
func (Delegate) Run(_ context.Context, _ Env, _ json.RawMessage) Result {
	return Fail(CodeNotAllowed, "delegate is carried out by the runner, not run as a tool")
}
