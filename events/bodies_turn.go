package events

// ContextPolicyAgent is the context policy turn.started names for an
// external agent's call: the agent built its own context, and its tools
// are its own (its turns have no dispatches).
const ContextPolicyAgent = "agent"

// TurnStarted (turn.started) records exactly what the model is sent: the
// digest of the request after every transformation (the body is a blob).
type TurnStarted struct {
	Turn          uint32 `msgpack:"turn"`
	ContextDigest Digest `msgpack:"context_digest"`
	Messages      uint32 `msgpack:"messages"`
	Policy        string `msgpack:"policy,omitempty"` // context policy in force
	// Reserve is the worst-case cost the runner reserved for the call, in
	// budget cost units; where the reply's cost is unknown the budget
	// charges this.
	Reserve uint64 `msgpack:"reserve,omitempty"`
	// Tokens is the estimated size of the context in tokens.
	Tokens uint64 `msgpack:"tokens,omitempty"`
}

// Kind implements Body.
func (TurnStarted) Kind() Kind { return KindTurnStarted }

func (b TurnStarted) validate(p string) error {
	if err := needPositive(p, "turn", b.Turn); err != nil {
		return err
	}
	return needDigest(p, "context_digest", b.ContextDigest)
}

// Usage is what one model call consumed, as the provider reported it.
// Cost is nil when the provider gave tokens but no price. CachedInputTokens
// (the part of InputTokens read from the provider's prompt cache) and
// ReasoningTokens (the part of OutputTokens spent on hidden reasoning) are
// nil when the provider did not report them: unknown, never zero.
// CacheWriteInputTokens (the part of InputTokens written to the
// provider's prompt cache, billed at its own price) likewise.
type Usage struct {
	InputTokens           uint64  `msgpack:"input_tokens"`
	OutputTokens          uint64  `msgpack:"output_tokens"`
	Cost                  *uint64 `msgpack:"cost,omitempty"`
	CachedInputTokens     *uint64 `msgpack:"cached_input_tokens,omitempty"`
	ReasoningTokens       *uint64 `msgpack:"reasoning_tokens,omitempty"`
	CacheWriteInputTokens *uint64 `msgpack:"cache_write_input_tokens,omitempty"`
}

// ToolCall is one call the model asked for. Args is the JSON text of the
// arguments, absent when they were moved to the blob ArgsDigest names
// (ArgsInBlob; blobreply.go).
type ToolCall struct {
	ID         CallID `msgpack:"id"`
	Name       string `msgpack:"name"`
	Args       string `msgpack:"args,omitempty"`
	ArgsDigest Digest `msgpack:"args_digest"`
}

func (c ToolCall) validate(p string) error {
	if err := needString(p, "id", c.ID); err != nil {
		return err
	}
	if err := needString(p, "name", c.Name); err != nil {
		return err
	}
	return needDigest(p, "args_digest", c.ArgsDigest)
}

// ModelReplied (model.replied) is the model's answer to one turn. Usage is
// nil when the provider reported none: unknown, not zero.
type ModelReplied struct {
	Turn        uint32     `msgpack:"turn"`
	Provider    string     `msgpack:"provider"`
	Model       string     `msgpack:"model,omitempty"`
	Text        string     `msgpack:"text,omitempty"`
	TextDigest  Digest     `msgpack:"text_digest,omitempty"` // set when Text was moved to a blob (TextInBlob)
	Calls       []ToolCall `msgpack:"calls"`
	Usage       *Usage     `msgpack:"usage,omitempty"`
	Finish      string     `msgpack:"finish,omitempty"` // provider's finish reason
	ReplyDigest Digest     `msgpack:"reply_digest,omitempty"`
	// Cached is set when the reply came from the response cache and the
	// model was not called: Usage is then the original call's tokens with
	// a billed cost of zero.
	Cached *CachedReply `msgpack:"cached,omitempty"`
	// QueueWaitMs is how long the call waited for a slot of a model limit
	// the fleet shares before it was sent; that wait is not counted
	// against the run's wall-time budget. 0 (left out): no wait.
	QueueWaitMs uint64 `msgpack:"queue_wait_ms,omitempty"`
	// CacheIdentity is the response cache's model identity the call was
	// looked up or stored under, set when the treatment's cache is on: a
	// later hit that cites this call is taken only under the same
	// identity. Absent when the cache is off, and in older facts.
	CacheIdentity Digest `msgpack:"cache_identity,omitempty"`
}

// CachedReply says where a cached reply came from: the cache entry it was
// read from (a blob holding the model identity, the request digest and the
// reply) and the call that first answered it.
type CachedReply struct {
	// Entry is the digest of the cache entry blob.
	Entry Digest `msgpack:"entry"`
	// Suite, Run and Turn name the call that first got the reply.
	Suite string `msgpack:"suite,omitempty"`
	Run   string `msgpack:"run,omitempty"`
	Turn  uint32 `msgpack:"turn,omitempty"`
	// Cost is what the original call was billed (absent: unknown); this
	// reply was billed nothing.
	Cost *uint64 `msgpack:"cost,omitempty"`
}

// Kind implements Body.
func (ModelReplied) Kind() Kind { return KindModelReplied }

func (b ModelReplied) validate(p string) error {
	if err := needPositive(p, "turn", b.Turn); err != nil {
		return err
	}
	if err := needString(p, "provider", b.Provider); err != nil {
		return err
	}
	if err := optDigest(p, "text_digest", b.TextDigest); err != nil {
		return err
	}
	if err := each(p, "calls", b.Calls); err != nil {
		return err
	}
	seen := make(map[CallID]bool, len(b.Calls))
	for i, c := range b.Calls {
		if seen[c.ID] {
			return invalid(join(at(join(p, "calls"), i), "id"), "duplicate call id %q", c.ID)
		}
		seen[c.ID] = true
	}
	if err := optDigest(p, "reply_digest", b.ReplyDigest); err != nil {
		return err
	}
	if err := optDigest(p, "cache_identity", b.CacheIdentity); err != nil {
		return err
	}
	if b.Cached != nil {
		return needDigest(p, "cached.entry", b.Cached.Entry)
	}
	return nil
}

// EffectClass says what a tool may touch.
type EffectClass string

// Effect classes. external and irreversible need an operation ID committed
// before the effect leaves.
const (
	EffectRead         EffectClass = "read"
	EffectWrite        EffectClass = "write"
	EffectExternal     EffectClass = "external"
	EffectIrreversible EffectClass = "irreversible"
)

var effectClasses = []EffectClass{EffectRead, EffectWrite, EffectExternal, EffectIrreversible}

// IsEffect reports whether an effect class reaches outside the workspace:
// what such a call did can only be known from the sink's answer.
func (c EffectClass) IsEffect() bool { return c == EffectExternal || c == EffectIrreversible }

// DispatchIntended (dispatch.intended) is committed before a tool runs, so
// that after a crash an unsettled dispatch is reconciled, never repeated.
type DispatchIntended struct {
	Turn        uint32      `msgpack:"turn"`
	CallID      CallID      `msgpack:"call_id"`
	Tool        string      `msgpack:"tool"`
	OperationID string      `msgpack:"operation_id"`
	ArgsDigest  Digest      `msgpack:"args_digest"`
	Effect      EffectClass `msgpack:"effect"`
	// Delegation, on a delegate call's intent, names the child run it
	// starts and the budget reserved for it (absent on any other call).
	Delegation *Delegation `msgpack:"delegation,omitempty"`
}

// Kind implements Body.
func (DispatchIntended) Kind() Kind { return KindDispatchIntended }

func (b DispatchIntended) validate(p string) error {
	if err := needPositive(p, "turn", b.Turn); err != nil {
		return err
	}
	if err := needString(p, "call_id", b.CallID); err != nil {
		return err
	}
	if err := needString(p, "tool", b.Tool); err != nil {
		return err
	}
	if err := needString(p, "operation_id", b.OperationID); err != nil {
		return err
	}
	if err := needDigest(p, "args_digest", b.ArgsDigest); err != nil {
		return err
	}
	if b.Delegation != nil {
		if err := b.Delegation.validate(join(p, "delegation")); err != nil {
			return err
		}
	}
	return needOneOf(p, "effect", b.Effect, effectClasses)
}

// ToolError is a typed tool failure the model can act on.
type ToolError struct {
	Code      string `msgpack:"code"`
	Message   string `msgpack:"message"`
	Retryable bool   `msgpack:"retryable"`
}

// DispatchCompleted (dispatch.completed) settles one dispatch.
type DispatchCompleted struct {
	Turn         uint32            `msgpack:"turn"`
	Dispatch     CompletedDispatch `msgpack:"dispatch"`
	Output       string            `msgpack:"output,omitempty"`
	OutputDigest Digest            `msgpack:"output_digest,omitempty"`
	Error        *ToolError        `msgpack:"error,omitempty"`
	// Child, on a delegate call's settlement, is how the child run ended
	// (absent on any other call, and on a delegation that was refused).
	Child *ChildOutcome `msgpack:"child,omitempty"`
}

// Kind implements Body.
func (DispatchCompleted) Kind() Kind { return KindDispatchComplete }

func (b DispatchCompleted) validate(p string) error {
	if err := needPositive(p, "turn", b.Turn); err != nil {
		return err
	}
	if err := b.Dispatch.validate(join(p, "dispatch")); err != nil {
		return err
	}
	if err := optDigest(p, "output_digest", b.OutputDigest); err != nil {
		return err
	}
	if b.Child != nil {
		if err := b.Child.validate(join(p, "child")); err != nil {
			return err
		}
	}
	if b.Error != nil {
		return needString(p, "error.code", b.Error.Code)
	}
	return nil
}

// TurnCompleted (turn.completed) closes a turn with its evidence. Each
// completed turn gets exactly one stall.observed and one stop.decided.
type TurnCompleted struct {
	Evidence RunEvidence `msgpack:"evidence"`
}

// Kind implements Body.
func (TurnCompleted) Kind() Kind { return KindTurnCompleted }

func (b TurnCompleted) validate(p string) error { return b.Evidence.validate(join(p, "evidence")) }

// StallObserved (stall.observed) is the stall handler's reading of one turn.
type StallObserved struct {
	Turn        uint32           `msgpack:"turn"`
	Observation StallObservation `msgpack:"observation"`
}

// Kind implements Body.
func (StallObserved) Kind() Kind { return KindStallObserved }

func (b StallObserved) validate(p string) error {
	if err := needPositive(p, "turn", b.Turn); err != nil {
		return err
	}
	return b.Observation.validate(join(p, "observation"))
}

// StopDecided (stop.decided) is the one decision for one completed turn.
type StopDecided struct {
	Decision StopDecision `msgpack:"decision"`
	// Judge is the reviewer's model call when the decider asked one about
	// a done decision (absent when it asked none, and in older facts).
	Judge *JudgeCall `msgpack:"judge,omitempty"`
}

// Kind implements Body.
func (StopDecided) Kind() Kind { return KindStopDecided }

func (b StopDecided) validate(p string) error {
	if b.Judge != nil {
		if err := b.Judge.validate(join(p, "judge")); err != nil {
			return err
		}
	}
	return b.Decision.validate(join(p, "decision"))
}
