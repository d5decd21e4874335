package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// ParseReply maps a Messages API response body onto a Reply, decoded by
// the SDK's own types: the text blocks joined, a tool call per tool_use
// block (its input object as the call's arguments), usage with the cache
// reads and writes and the thinking tokens where the API sent them, and
// the stop reason as a finish ("end_turn" and "stop_sequence" stop,
// "tool_use" tool_calls, "max_tokens" and "model_context_window_exceeded"
// length, "refusal" refusal, any other word as it is). Cost is left to
// the caller, who knows the prices. A body that is not a message is an
// error naming what is wrong.
func ParseReply(raw []byte) (models.Reply, error) {
	if !json.Valid(raw) {
		return models.Reply{}, fmt.Errorf("the body is not JSON: %q", httpmodel.ClipTo(string(raw), 120))
	}
	var msg sdk.Message
	if err := json.Unmarshal(raw, &msg); err != nil {
		return models.Reply{}, fmt.Errorf("the body is not a message: %v", err)
	}
	if msg.Type != "message" {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return models.Reply{}, fmt.Errorf("not a message; the provider says: %s", httpmodel.ClipTo(e.Error.Message, 120))
		}
		return models.Reply{}, fmt.Errorf("the body is not a message (type %q)", httpmodel.ClipTo(string(msg.Type), 40))
	}
	if !msg.JSON.Content.Valid() {
		return models.Reply{}, errors.New("the message has no content")
	}
	reply := models.Reply{Model: string(msg.Model)}
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			reply.Text += b.Text
		case "tool_use":
			args := b.JSON.Input.Raw()
			if args == "" || args == "null" {
				args = "{}"
			}
			if b.ID == "" || b.Name == "" {
				return models.Reply{}, fmt.Errorf("content block %d: a tool_use block without id or name", i)
			}
			// Taken, it could never be sent back as a tool_use block
			// (callInput): the next turn would fail to render.
			if _, err := callInput(args); err != nil {
				return models.Reply{}, fmt.Errorf("content block %d: tool_use %s (%s): %w", i, b.ID, b.Name, err)
			}
			reply.Calls = append(reply.Calls, models.ToolCall{ID: b.ID, Name: b.Name, Args: args})
		}
		// Thinking blocks are the model's hidden reasoning: counted in
		// usage, not part of the answer.
	}
	if msg.JSON.Usage.Valid() {
		u, err := usageOf(msg.Usage)
		if err != nil {
			return models.Reply{}, err
		}
		reply.Usage = u
	}
	switch msg.StopReason {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence, "":
		reply.Finish = models.FinishStop
		if len(reply.Calls) > 0 {
			reply.Finish = models.FinishToolCalls
		}
	case sdk.StopReasonToolUse:
		reply.Finish = models.FinishToolCalls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		reply.Finish = models.FinishLength
	case sdk.StopReasonRefusal:
		reply.Finish = models.FinishRefusal
	default:
		reply.Finish = string(msg.StopReason) // pause_turn, or a word the API adds later
	}
	return reply, nil
}

// usageOf maps the API's usage: input_tokens counts only what was neither
// read from nor written to the prompt cache, so the Reply's input is the
// sum of the three, of which the reads and the writes are named parts.
func usageOf(u sdk.Usage) (*models.Usage, error) {
	if !u.JSON.InputTokens.Valid() || !u.JSON.OutputTokens.Valid() {
		return nil, nil
	}
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 || u.CacheCreationInputTokens < 0 {
		return nil, fmt.Errorf("negative token counts in usage: %d in, %d out, %d cache read, %d cache write",
			u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
	}
	out := &models.Usage{OutputTokens: uint64(u.OutputTokens)}
	in := uint64(u.InputTokens)
	if u.JSON.CacheReadInputTokens.Valid() {
		n := uint64(u.CacheReadInputTokens)
		out.CachedInputTokens = &n
		in += n
	}
	if u.JSON.CacheCreationInputTokens.Valid() {
		n := uint64(u.CacheCreationInputTokens)
		out.CacheWriteInputTokens = &n
		in += n
	}
	out.InputTokens = in
	if d := u.OutputTokensDetails; u.JSON.OutputTokensDetails.Valid() && d.JSON.ThinkingTokens.Valid() {
		if d.ThinkingTokens < 0 || d.ThinkingTokens > u.OutputTokens {
			return nil, fmt.Errorf("usage: thinking_tokens %d is not a part of output_tokens %d", d.ThinkingTokens, u.OutputTokens)
		}
		n := uint64(d.ThinkingTokens)
		out.ReasoningTokens = &n
	}
	return out, nil
}

// Reserve returns the worst-case cost of req in cost units: the input
// estimate (rendered bytes / BytesPerToken, rounded up) at the dearest
// input price and max_tokens of output, rounded up. 0 when the prices are
// unknown or the request does not render (Complete then refuses it
// without calling the provider).
func (m *Model) Reserve(req models.Request) uint64 {
	if !m.prices.Known() {
		return 0
	}
	p, body, err := m.build(req)
	if err != nil {
		return 0
	}
	in := (uint64(len(body)) + uint64(m.cfg.BytesPerToken) - 1) / uint64(m.cfg.BytesPerToken)
	return m.prices.Reserve(in, uint64(p.MaxTokens))
}
