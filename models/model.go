// Package models is the model port: one interface between factline and any
// language model, used by the runner (the actor) and the grader (a judge).
// A model takes a bounded context, tool schemas and settings and returns
// text and/or tool calls with usage (or none: unknown usage) or a typed
// error. Providers live in subpackages: scripted (deterministic scripts for
// examples, tests and benchmarks), openai (any OpenAI-compatible Chat
// Completions endpoint), responses (OpenAI's Responses API) and anthropic
// (Anthropic's Messages API); hosted builds the one a model spec names.
package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role is who speaks a message.
type Role string

// Message roles, as Chat Completions knows them.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the model-visible context.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID correlates a tool message with the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one call the model asks for. Args is the JSON text of the
// arguments exactly as the model produced it (it may be malformed: the
// runner validates it, the model port does not).
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// ToolSpec offers one tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON schema object
}

// Settings are the request settings of a call.
type Settings struct {
	Model           string   `json:"model"`
	Temperature     *float64 `json:"temperature,omitempty"`
	MaxOutputTokens int      `json:"max_output_tokens,omitempty"`
	Seed            *int64   `json:"seed,omitempty"`
	TopP            *float64 `json:"top_p,omitempty"`
	ReasoningEffort string   `json:"reasoning_effort,omitempty"`
}

// Request is one model call: the context, the tools, the settings and
// what the caller demands of the answer.
type Request struct {
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	Settings Settings   `json:"settings"`
	// ToolChoice and Output are the agent's demands on the answer (an
	// external agent's, read by the agent proxy; factline's own loop
	// sets neither). Nil is the provider's default, and leaves every
	// request made before they existed rendered, stored and digested as
	// it was.
	ToolChoice *ToolChoice `json:"tool_choice,omitempty"`
	Output     *Output     `json:"output,omitempty"`
	// Turn is the 1-based turn of the run this call serves. Scripted models
	// answer by turn; real providers ignore it (it is not sent).
	Turn int `json:"-"`
}

// Usage is what one call consumed. Cost is in the integer cost units the
// budget uses, nil when the provider reports tokens but no price is known.
// CachedInputTokens (read from the provider's prompt cache, part of
// InputTokens) and ReasoningTokens (hidden reasoning, part of OutputTokens)
// are nil when the provider does not report them, and so is
// CacheWriteInputTokens (written to the provider's prompt cache, part of
// InputTokens: Anthropic's cache_creation_input_tokens, the Responses
// API's cache_write_tokens).
type Usage struct {
	InputTokens           uint64  `json:"input_tokens"`
	OutputTokens          uint64  `json:"output_tokens"`
	Cost                  *uint64 `json:"cost,omitempty"`
	CachedInputTokens     *uint64 `json:"cached_input_tokens,omitempty"`
	ReasoningTokens       *uint64 `json:"reasoning_tokens,omitempty"`
	CacheWriteInputTokens *uint64 `json:"cache_write_input_tokens,omitempty"`
}

// Finish reasons a reply can carry.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
	FinishRefusal   = "refusal" // the provider refused or filtered: review, do not retry
)

// Reply is a model's answer. Usage is nil when the provider reported none:
// unknown, never zero.
type Reply struct {
	Text   string     `json:"text,omitempty"`
	Calls  []ToolCall `json:"calls,omitempty"`
	Usage  *Usage     `json:"usage,omitempty"`
	Finish string     `json:"finish,omitempty"`
	// Model is the model the provider says answered.
	Model string `json:"model,omitempty"`
	// QueueWait is how long the call waited for a slot of a limit the
	// fleet shares (package limit) before it was sent. It is no part of
	// the provider's answer: the runner records it in model.replied.
	QueueWait time.Duration `json:"-"`
}

// Model is the port every provider implements.
type Model interface {
	// Provider names the provider ("scripted", "openai",
	// "openai-responses", "anthropic").
	Provider() string
	// Render returns the exact request body the provider will send for req,
	// after every transformation. The runner stores it as a blob and
	// commits its digest in turn.started before calling Complete, so the
	// model-visible history can be proven. It must be deterministic.
	Render(req Request) ([]byte, error)
	// Reserve returns the worst-case cost of req in budget cost units: the
	// runner refuses the call when it does not fit the remaining budget.
	Reserve(req Request) uint64
	// Complete sends the request Render describes and returns the reply.
	Complete(ctx context.Context, req Request) (Reply, error)
}

// ErrorKind classifies model errors so that callers decide without parsing
// messages.
type ErrorKind string

// Error kinds.
const (
	// ErrRateLimited: the provider asked us to slow down (429) and retries
	// ran out. Retryable later.
	ErrRateLimited ErrorKind = "rate_limited"
	// ErrUnavailable: server errors or connection failures outlasted retries.
	ErrUnavailable ErrorKind = "unavailable"
	// ErrTimeout: the per-call timeout passed.
	ErrTimeout ErrorKind = "timeout"
	// ErrRefused: the provider refused the request or filtered the answer
	// (safety stop). Never retried: the run ends for review.
	ErrRefused ErrorKind = "refused"
	// ErrBadResponse: the provider answered with something that is not a
	// valid reply (malformed body, no choices).
	ErrBadResponse ErrorKind = "bad_response"
	// ErrBadRequest: the provider rejected the request itself (4xx other
	// than 429), e.g. an unknown model or a too-long context.
	ErrBadRequest ErrorKind = "bad_request"
	// ErrExhausted: a scripted model has no more turns.
	ErrExhausted ErrorKind = "exhausted"
	// ErrConfig: the model is not usable as configured (missing key, URL).
	ErrConfig ErrorKind = "config"
)

// Error is a typed model error.
type Error struct {
	Kind     ErrorKind
	Provider string
	// Status is the HTTP status, when there was one.
	Status int
	// RetryAfter is what the provider asked for, when it did.
	RetryAfter time.Duration
	// Attempts is how many calls were made before giving up.
	Attempts int
	Err      error
}

// Error formats the error as "model <provider>: <kind> (HTTP <status>) after
// <n> attempts: <cause>", leaving out the parts that are unknown.
func (e *Error) Error() string {
	msg := fmt.Sprintf("model %s: %s", e.Provider, e.Kind)
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a model error, or "" if err is not one.
func KindOf(err error) ErrorKind {
	var me *Error
	if errors.As(err, &me) {
		return me.Kind
	}
	return ""
}
