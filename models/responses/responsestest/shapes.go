package responsestest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Usage is a response's usage as the API reports it: InputTokens is the
// whole input, of which CachedTokens and CacheWriteTokens are parts;
// OutputTokens the whole output, of which ReasoningTokens is one.
type Usage struct {
	InputTokens, CachedTokens, CacheWriteTokens int64
	OutputTokens, ReasoningTokens               int64
}

func (u Usage) json() string {
	return fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d,"cache_write_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}`,
		u.InputTokens, u.CachedTokens, u.CacheWriteTokens, u.OutputTokens, u.ReasoningTokens, u.InputTokens+u.OutputTokens)
}

// Call is one function_call output item.
type Call struct {
	CallID, Name string
	Arguments    string // the JSON text of the arguments
}

// Response is a 200 reply: a response object of the given status,
// incomplete reason ("" for none) and output items (JSON objects).
func Response(model, status, incomplete string, u Usage, items ...string) Reply {
	out := "["
	for i, it := range items {
		if i > 0 {
			out += ","
		}
		out += it
	}
	out += "]"
	details := "null"
	if incomplete != "" {
		details = fmt.Sprintf(`{"reason":%q}`, incomplete)
	}
	return Reply{Body: fmt.Sprintf(`{"id":"resp_fake","object":"response","created_at":1,"status":%q,"error":null,"incomplete_details":%s,"model":%q,"output":%s,"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"store":false,"usage":%s}`,
		status, details, model, out, u.json())}
}

// MessageItem is an output message of output_text parts.
func MessageItem(texts ...string) string {
	parts := make([]map[string]any, len(texts))
	for i, t := range texts {
		parts[i] = map[string]any{"type": "output_text", "text": t, "annotations": []any{}}
	}
	b, _ := json.Marshal(map[string]any{"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant", "content": parts})
	return string(b)
}

// RefusalItem is an output message whose content is a refusal part.
func RefusalItem(refusal string) string {
	b, _ := json.Marshal(map[string]any{"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
		"content": []map[string]any{{"type": "refusal", "refusal": refusal}}})
	return string(b)
}

// FunctionCallItem is a function_call output item.
func FunctionCallItem(c Call) string {
	b, _ := json.Marshal(map[string]any{"type": "function_call", "id": "fc_" + c.CallID, "call_id": c.CallID, "name": c.Name,
		"arguments": c.Arguments, "status": "completed"})
	return string(b)
}

// ReasoningItem is a reasoning output item (its summary empty).
func ReasoningItem() string {
	return `{"type":"reasoning","id":"rs_fake","summary":[]}`
}

// Text is a completed response of one message.
func Text(model, text string, u Usage) Reply {
	return Response(model, "completed", "", u, MessageItem(text))
}

// FunctionCalls is a completed response that calls functions.
func FunctionCalls(model string, u Usage, calls ...Call) Reply {
	items := make([]string, len(calls))
	for i, c := range calls {
		items[i] = FunctionCallItem(c)
	}
	return Response(model, "completed", "", u, items...)
}

// MaxOutputTokens is a response incomplete at max_output_tokens, with what
// text came before.
func MaxOutputTokens(model, partial string, u Usage) Reply {
	return Response(model, "incomplete", "max_output_tokens", u, MessageItem(partial))
}

// Refusal is a completed response whose message is a refusal.
func Refusal(model, refusal string, u Usage) Reply {
	return Response(model, "completed", "", u, RefusalItem(refusal))
}

// ContentFiltered is a response incomplete for its content filter.
func ContentFiltered(model string, u Usage) Reply {
	return Response(model, "incomplete", "content_filter", u)
}

// Error is an error reply: status and {"error":{...}}.
func Error(status int, errType, code, message string) Reply {
	e := map[string]any{"message": message, "type": errType, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return Reply{Status: status, Body: string(b)}
}

// RateLimited is a 429 asking to wait retryAfter seconds (the retry-after
// header; none when empty).
func RateLimited(retryAfter string) Reply {
	r := Error(http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached for requests")
	if retryAfter != "" {
		r.Header = map[string]string{"retry-after": retryAfter}
	}
	return r
}

// Overloaded is a 503: the engine is overloaded.
func Overloaded() Reply {
	return Error(http.StatusServiceUnavailable, "server_error", "", "The engine is currently overloaded, please try again later")
}
