package agentproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/factline/factline/models"
)

// MessagesPath is where Anthropic's Messages API is served.
const MessagesPath = "/v1/messages"

// MessagesUnversionedPath serves the Messages wire too: the endpoint's
// ANTHROPIC_BASE_URL is its origin, to which Anthropic's clients add
// /v1/messages, while the Vercel AI SDK's @ai-sdk/anthropic reads the same
// variable as a versioned base and adds /messages alone.
const MessagesUnversionedPath = "/messages"

// messagesRequest is the part of a Messages API request the proxy reads.
// The agent's model, max_tokens, thinking and other settings are not
// taken: the treatment's answer every call.
type messagesRequest struct {
	Model    string            `json:"model"`
	System   json.RawMessage   `json:"system"`
	Messages []messagesMessage `json:"messages"`
	Tools    []messagesTool    `json:"tools"`
	Stream   bool              `json:"stream"`
	// ToolChoice and the structured output (OutputConfig's format, or
	// the beta's OutputFormat) are the agent's program, and are taken.
	ToolChoice   json.RawMessage `json:"tool_choice"`
	OutputConfig json.RawMessage `json:"output_config"`
	OutputFormat json.RawMessage `json:"output_format"`
}

type messagesMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type messagesTool struct {
	namedTool
	InputSchema json.RawMessage `json:"input_schema"`
}

func (t messagesTool) declared() (declaredTool, error) {
	if t.Type != "" && t.Type != "custom" {
		return declaredTool{}, fmt.Errorf("type: %q is a server tool the endpoint cannot serve", t.Type)
	}
	return declaredTool{"name", t.Name, t.Description, t.InputSchema}, nil
}

// messagesBlock is one content block of a message.
type messagesBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// DecodeMessages reads a Messages API request body into the model port's
// request, and whether the agent asked for a stream. system (a string or
// text blocks) is a first system message. A message's role is user,
// assistant or system; its content a string or blocks: text blocks are
// its text, an assistant's tool_use blocks its calls (the input's JSON
// text as the arguments), a user's tool_result blocks tool messages for
// the calls they answer (an error result's text prefixed "error: ").
// Thinking blocks are dropped: the endpoint never sends any. Anything
// else — an image, a document, a server tool (web_search, a
// computer-use tool), a tool without a name — is refused naming where, as
// is a history Anthropic refuses: a tool_use whose input is not a JSON
// object, two tool_use blocks with one id, a tool_result answering no
// tool_use of the previous message, a tool_use whose tool_result is not
// in the next message. Messages need not alternate user and assistant:
// Anthropic combines consecutive turns of one role. tool_choice and the
// json_schema of output_config.format (or the beta's output_format) are
// the request's ToolChoice and Output, refused naming the field where the
// API would refuse them.
func DecodeMessages(body []byte) (models.Request, bool, error) {
	var in messagesRequest
	if err := decodeBody(body, &in); err != nil {
		return models.Request{}, false, err
	}
	if len(in.Messages) == 0 {
		return models.Request{}, false, fmt.Errorf("messages: none given")
	}
	var out models.Request
	if sys, err := blocksText(in.System); err != nil {
		return models.Request{}, false, fmt.Errorf("system: %w", err)
	} else if sys != "" {
		out.Messages = append(out.Messages, models.Message{Role: models.RoleSystem, Content: sys})
	}
	made := newMadeCalls()
	for i, m := range in.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		role := models.Role(m.Role)
		switch role {
		case models.RoleUser, models.RoleAssistant, models.RoleSystem:
		default:
			return models.Request{}, false, fmt.Errorf("%s.role: unknown role %q", where, m.Role)
		}
		if role == models.RoleAssistant {
			// The tool_result blocks answering an assistant message's
			// tool_use blocks are in the next message, a user's. A system
			// message (claude-code sends one among the messages) is no
			// turn of the conversation, and is passed over.
			if err := made.closeTurn("tool_use", "tool_result", fmt.Sprintf("in the next message (%s, an assistant message)", where)); err != nil {
				return models.Request{}, false, err
			}
		}
		msgs, err := messagesOf(role, m.Content, where, made)
		if err != nil {
			return models.Request{}, false, err
		}
		out.Messages = append(out.Messages, msgs...)
		if role == models.RoleUser {
			if err := made.closeTurn("tool_use", "tool_result", fmt.Sprintf("in the next message (%s)", where)); err != nil {
				return models.Request{}, false, err
			}
		}
	}
	tools, err := endRequest(made, "tool_use", "tool_result", in.Tools)
	if err != nil {
		return models.Request{}, false, err
	}
	out.Tools = tools
	if out.ToolChoice, err = messagesToolChoice(in.ToolChoice); err != nil {
		return models.Request{}, false, err
	}
	if err := checkToolChoice(out.ToolChoice, "tool_choice.name", tools); err != nil {
		return models.Request{}, false, err
	}
	if out.Output, err = messagesOutputFormat(in.OutputConfig, in.OutputFormat); err != nil {
		return models.Request{}, false, err
	}
	return out, in.Stream, nil
}

// messagesOf reads one message's content into the port's messages: an
// assistant's text and calls are one message; a user's tool results are
// tool messages, in order, and its text a user message after them.
// A tool_use block's input must be a JSON object, and a tool_result must
// answer a tool_use made before it (made, which it adds to).
func messagesOf(role models.Role, raw json.RawMessage, where string, made *madeCalls) ([]models.Message, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []models.Message{{Role: role, Content: s}}, nil
	}
	var blocks []messagesBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("%s.content: neither a string nor a list of blocks", where)
	}
	var out []models.Message
	var text strings.Builder
	var calls []models.ToolCall
	flush := func() {
		if text.Len() > 0 || len(calls) > 0 {
			out = append(out, models.Message{Role: role, Content: text.String(), ToolCalls: calls})
			text.Reset()
			calls = nil
		}
	}
	for j, b := range blocks {
		at := fmt.Sprintf("%s.content[%d]", where, j)
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking", "redacted_thinking":
		case "tool_use":
			if role != models.RoleAssistant {
				return nil, fmt.Errorf("%s: a tool_use block in a %s message", at, role)
			}
			if b.ID == "" || b.Name == "" {
				return nil, fmt.Errorf("%s: a tool_use block needs id and name", at)
			}
			if len(b.Input) == 0 {
				return nil, fmt.Errorf("%s.input: required", at)
			}
			if err := jsonObject(b.Input); err != nil {
				return nil, fmt.Errorf("%s.input: %w", at, err)
			}
			if err := made.made(b.ID, at); err != nil {
				return nil, fmt.Errorf("%s.id: %w", at, err)
			}
			calls = append(calls, models.ToolCall{ID: b.ID, Name: b.Name, Args: string(b.Input)})
		case "tool_result":
			if role != models.RoleUser {
				return nil, fmt.Errorf("%s: a tool_result block in a %s message", at, role)
			}
			if err := made.answers(b.ToolUseID, "tool_use block", "in the previous message"); err != nil {
				return nil, fmt.Errorf("%s.tool_use_id: %w", at, err)
			}
			result, err := blocksText(b.Content)
			if err != nil {
				return nil, fmt.Errorf("%s.content: %w", at, err)
			}
			if b.IsError {
				result = "error: " + result
			}
			flush()
			out = append(out, models.Message{Role: models.RoleTool, Content: result, ToolCallID: b.ToolUseID})
		default:
			return nil, fmt.Errorf("%s.type: %q blocks are not supported (text, tool_use, tool_result, thinking)", at, b.Type)
		}
	}
	flush()
	if len(out) == 0 {
		// An empty message keeps its place in the conversation.
		out = append(out, models.Message{Role: role})
	}
	return out, nil
}

// blocksText reads a string, or a list of text blocks, as its text.
func blocksText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("neither a string nor a list of blocks")
	}
	var b strings.Builder
	for i, bl := range blocks {
		if bl.Type != "text" {
			return "", fmt.Errorf("block %d: %q blocks are not supported (text only)", i, bl.Type)
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// messagesUsage is the Messages API's usage object. The wire has no
// unknown usage: a reply without usage is sent as zeros, while the turn's
// fact keeps it unknown.
type messagesUsage struct {
	InputTokens              uint64 `json:"input_tokens"`
	OutputTokens             uint64 `json:"output_tokens"`
	CacheReadInputTokens     uint64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens uint64 `json:"cache_creation_input_tokens"`
}

func messagesUsageOf(r models.Reply) messagesUsage {
	var u messagesUsage
	if r.Usage == nil {
		return u
	}
	u.InputTokens, u.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
	// The Messages API counts cache reads and writes apart from
	// input_tokens; the port counts them in it.
	if c := r.Usage.CachedInputTokens; c != nil && *c <= u.InputTokens {
		u.CacheReadInputTokens = *c
		u.InputTokens -= *c
	}
	if c := r.Usage.CacheWriteInputTokens; c != nil && *c <= u.InputTokens {
		u.CacheCreationInputTokens = *c
		u.InputTokens -= *c
	}
	return u
}

// stopReason is the Messages API's stop reason of a reply.
func stopReason(r models.Reply) string {
	switch {
	case r.Finish == models.FinishRefusal:
		return "refusal"
	case r.Finish == models.FinishLength:
		return "max_tokens"
	case len(r.Calls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

// messagesBlocks are a reply's content blocks: its text (when it has any,
// or nothing else), then a tool_use block per call. A call's arguments
// that are not a JSON object cannot be a tool_use input: they are refused.
func messagesBlocks(r models.Reply) ([]map[string]any, error) {
	var out []map[string]any
	if r.Text != "" || len(r.Calls) == 0 {
		out = append(out, map[string]any{"type": "text", "text": r.Text})
	}
	for i, c := range r.Calls {
		input := json.RawMessage(c.Args)
		if strings.TrimSpace(c.Args) == "" {
			input = json.RawMessage(`{}`)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(input, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("call %d (%s): arguments are not a JSON object, which a tool_use input must be", i, c.Name)
		}
		out = append(out, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
	}
	return out, nil
}

// EncodeMessages is the non-streaming Messages API response to a reply.
func EncodeMessages(id, model string, r models.Reply) ([]byte, error) {
	blocks, err := messagesBlocks(r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"id": id, "type": "message", "role": "assistant", "model": model, "content": blocks,
		"stop_reason": stopReason(r), "stop_sequence": nil, "usage": messagesUsageOf(r)})
}

// EncodeMessagesStream is the streamed Messages API response to a reply,
// as the events the API sends, in order: message_start (no content, the
// input usage); per block content_block_start, one delta with the whole
// text (text_delta) or input (input_json_delta), content_block_stop; then
// message_delta with the stop reason and the output usage, and
// message_stop.
func EncodeMessagesStream(id, model string, r models.Reply) ([]Event, error) {
	blocks, err := messagesBlocks(r)
	if err != nil {
		return nil, err
	}
	usage := messagesUsageOf(r)
	var stream eventStream
	startUsage := usage
	startUsage.OutputTokens = 0
	steps := []struct {
		name   string
		fields map[string]any
	}{{"message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage}}}}
	for i, b := range blocks {
		var opened, delta map[string]any
		if b["type"] == "text" {
			opened = map[string]any{"type": "text", "text": ""}
			delta = map[string]any{"type": "text_delta", "text": b["text"]}
		} else {
			opened = map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(b["input"].(json.RawMessage))}
		}
		steps = append(steps, []struct {
			name   string
			fields map[string]any
		}{
			{"content_block_start", map[string]any{"index": i, "content_block": opened}},
			{"content_block_delta", map[string]any{"index": i, "delta": delta}},
			{"content_block_stop", map[string]any{"index": i}},
		}...)
	}
	steps = append(steps, []struct {
		name   string
		fields map[string]any
	}{
		{"message_delta", map[string]any{"delta": map[string]any{"stop_reason": stopReason(r), "stop_sequence": nil}, "usage": usage}},
		{"message_stop", map[string]any{}},
	}...)
	for _, s := range steps {
		if err := stream.add(s.name, s.fields); err != nil {
			return nil, err
		}
	}
	return stream.events, nil
}

// anthropicErrorType is the Messages API's error type for a status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusConflict:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	}
	return "api_error"
}

// writeAnthropicError answers in the Messages API's error shape; the
// OpenAI type and code the caller names are kept in the message.
func writeAnthropicError(w http.ResponseWriter, status int, _, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error",
		"error": map[string]any{"type": anthropicErrorType(status), "message": code + ": " + msg}})
}
