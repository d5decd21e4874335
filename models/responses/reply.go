package responses

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/openai/openai-go/v3/responses"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// ParseReply maps a Responses API response body onto a Reply, decoded by
// the SDK's own types: the output_text parts of the output messages
// joined, a tool call per function_call item (call_id, name and the
// arguments text), usage with the cached and cache-written input and the
// reasoning tokens where the API sent them, and a finish: "refusal" for a
// refusal part or a response incomplete for its content filter, "length"
// for one incomplete at max_output_tokens, else tool_calls or stop. A
// failed response, or a body that is not a response, is an error naming
// what is wrong. Reasoning items are the model's hidden reasoning: counted
// in usage, not part of the answer. Cost is left to the caller.
func ParseReply(raw []byte) (models.Reply, error) {
	if !json.Valid(raw) {
		return models.Reply{}, fmt.Errorf("the body is not JSON: %q", httpmodel.ClipTo(string(raw), 120))
	}
	var r sdk.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return models.Reply{}, fmt.Errorf("the body is not a response: %v", err)
	}
	if r.Object != "response" {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return models.Reply{}, fmt.Errorf("not a response; the provider says: %s", httpmodel.ClipTo(e.Error.Message, 120))
		}
		return models.Reply{}, fmt.Errorf("the body is not a response (object %q)", httpmodel.ClipTo(string(r.Object), 40))
	}
	switch r.Status {
	case sdk.ResponseStatusFailed:
		return models.Reply{}, fmt.Errorf("the response failed (%s): %s", httpmodel.ClipTo(string(r.Error.Code), 60), httpmodel.ClipTo(r.Error.Message, 120))
	case sdk.ResponseStatusInProgress, sdk.ResponseStatusQueued, sdk.ResponseStatusCancelled:
		return models.Reply{}, fmt.Errorf("the response is %s, not an answer", r.Status)
	}
	if !r.JSON.Output.Valid() {
		return models.Reply{}, errors.New("the response has no output")
	}
	reply := models.Reply{Model: string(r.Model)}
	refused := false
	for i, item := range r.Output {
		switch item.Type {
		case "message":
			for _, part := range item.Content {
				switch part.Type {
				case "output_text":
					reply.Text += part.Text
				case "refusal":
					refused = true
					reply.Text += part.Refusal
				}
			}
		case "function_call":
			if item.CallID == "" || item.Name == "" {
				return models.Reply{}, fmt.Errorf("output %d: a function_call without call_id or name", i)
			}
			reply.Calls = append(reply.Calls, models.ToolCall{ID: item.CallID, Name: item.Name, Args: arguments(item)})
		}
	}
	if r.JSON.Usage.Valid() {
		u, err := usageOf(r.Usage)
		if err != nil {
			return models.Reply{}, err
		}
		reply.Usage = u
	}
	switch {
	case refused:
		reply.Finish = models.FinishRefusal
	case r.Status == sdk.ResponseStatusIncomplete:
		switch reason := r.IncompleteDetails.Reason; reason {
		case "max_output_tokens":
			reply.Finish = models.FinishLength
		case "content_filter":
			reply.Finish = models.FinishRefusal
		case "":
			reply.Finish = "incomplete"
		default:
			reply.Finish = reason // a word the API adds later
		}
	case len(reply.Calls) > 0:
		reply.Finish = models.FinishToolCalls
	default:
		reply.Finish = models.FinishStop
	}
	return reply, nil
}

// arguments is a function_call's arguments text: the string the API sends,
// or the text of an object a server sent instead.
func arguments(item sdk.ResponseOutputItemUnion) string {
	raw := item.JSON.Arguments.Raw()
	var s string
	if json.Unmarshal([]byte(raw), &s) == nil {
		return s
	}
	if raw == "" || raw == "null" {
		return ""
	}
	return raw
}

// usageOf maps the API's usage: input_tokens is the whole input, of which
// the cached and the cache-written tokens are named parts; output_tokens
// the whole output, of which the reasoning tokens are one.
func usageOf(u sdk.ResponseUsage) (*models.Usage, error) {
	if !u.JSON.InputTokens.Valid() || !u.JSON.OutputTokens.Valid() {
		return nil, nil
	}
	if u.InputTokens < 0 || u.OutputTokens < 0 {
		return nil, fmt.Errorf("negative token counts in usage: %d in, %d out", u.InputTokens, u.OutputTokens)
	}
	out := &models.Usage{InputTokens: uint64(u.InputTokens), OutputTokens: uint64(u.OutputTokens)}
	part := func(valid bool, n int64, whole uint64, name string) (*uint64, error) {
		if !valid {
			return nil, nil
		}
		if n < 0 || uint64(n) > whole {
			return nil, fmt.Errorf("usage: %s %d is not a part of %d", name, n, whole)
		}
		v := uint64(n)
		return &v, nil
	}
	var err error
	d := u.InputTokensDetails
	in := u.JSON.InputTokensDetails.Valid()
	if out.CachedInputTokens, err = part(in && d.JSON.CachedTokens.Valid(), d.CachedTokens, out.InputTokens, "cached_tokens"); err != nil {
		return nil, err
	}
	if out.CacheWriteInputTokens, err = part(in && d.JSON.CacheWriteTokens.Valid(), d.CacheWriteTokens, out.InputTokens, "cache_write_tokens"); err != nil {
		return nil, err
	}
	o := u.OutputTokensDetails
	if out.ReasoningTokens, err = part(u.JSON.OutputTokensDetails.Valid() && o.JSON.ReasoningTokens.Valid(), o.ReasoningTokens, out.OutputTokens, "reasoning_tokens"); err != nil {
		return nil, err
	}
	return out, nil
}
