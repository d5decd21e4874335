package events

// JudgeCall is one model call an evaluator made: the grader's judge
// instrument, or the stop decider's reviewer of a done decision. It is
// recorded so that a report can say what evaluation cost, apart from what
// the agent under test consumed (seed 004). Usage is nil when the provider
// reported none: unknown, never zero.
type JudgeCall struct {
	// Model names the judging model, provider/name.
	Model string `msgpack:"model" json:"model"`
	// Usage is what the call consumed, as the provider reported it.
	Usage *Usage `msgpack:"usage,omitempty" json:"usage,omitempty"`
	// Millis is how long the call took, answered or not.
	Millis uint64 `msgpack:"millis" json:"millis"`
}

func (j JudgeCall) validate(p string) error { return needString(p, "model", j.Model) }
