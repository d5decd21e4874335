package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Usage is a reply's usage as the API reports it.
type Usage struct {
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64
	// ThinkingTokens, when positive, is sent as
	// output_tokens_details.thinking_tokens.
	ThinkingTokens int64
}

func (u Usage) json() string {
	s := fmt.Sprintf(`{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d`,
		u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
	if u.ThinkingTokens > 0 {
		s += fmt.Sprintf(`,"output_tokens_details":{"thinking_tokens":%d}`, u.ThinkingTokens)
	}
	return s + `}`
}

// Call is one tool_use block of a reply.
type Call struct {
	ID, Name string
	Input    string // a JSON object
}

// Answer is a 200 reply: a message of the given content blocks (JSON
// objects) with its stop reason and usage.
func Answer(model, stopReason string, u Usage, blocks ...string) Reply {
	content := "["
	for i, b := range blocks {
		if i > 0 {
			content += ","
		}
		content += b
	}
	content += "]"
	return Reply{Body: fmt.Sprintf(`{"id":"msg_fake","type":"message","role":"assistant","model":%q,"content":%s,"stop_reason":%q,"stop_sequence":null,"usage":%s}`,
		model, content, stopReason, u.json())}
}

// TextBlock is a text content block.
func TextBlock(text string) string {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return string(b)
}

// ToolUseBlock is a tool_use content block.
func ToolUseBlock(c Call) string {
	return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, c.ID, c.Name, c.Input)
}

// Text is a reply that ends its turn with text (stop_reason "end_turn").
func Text(model, text string, u Usage) Reply {
	return Answer(model, "end_turn", u, TextBlock(text))
}

// ToolUse is a reply that calls tools (stop_reason "tool_use").
func ToolUse(model string, u Usage, calls ...Call) Reply {
	blocks := make([]string, len(calls))
	for i, c := range calls {
		blocks[i] = ToolUseBlock(c)
	}
	return Answer(model, "tool_use", u, blocks...)
}

// MaxTokens is a reply cut at max_tokens (stop_reason "max_tokens").
func MaxTokens(model, partial string, u Usage) Reply {
	return Answer(model, "max_tokens", u, TextBlock(partial))
}

// Refusal is a reply the API's classifiers stopped (stop_reason
// "refusal"), with what text came before.
func Refusal(model, partial string, u Usage) Reply {
	if partial == "" {
		return Answer(model, "refusal", u)
	}
	return Answer(model, "refusal", u, TextBlock(partial))
}

// Error is an error reply: status and {"type":"error","error":{...}}.
func Error(status int, errType, message string) Reply {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": errType, "message": message}})
	return Reply{Status: status, Body: string(b)}
}

// Overloaded is the API's 529 overloaded_error.
func Overloaded() Reply { return Error(529, "overloaded_error", "Overloaded") }

// RateLimited is a 429 rate_limit_error asking to wait retryAfter
// seconds (the retry-after header; none when empty).
func RateLimited(retryAfter string) Reply {
	r := Error(http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
	if retryAfter != "" {
		r.Header = map[string]string{"retry-after": retryAfter}
	}
	return r
}
