package agentproxy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/factline/factline/models"
)

// ChatPath is where the OpenAI Chat Completions wire is served.
const ChatPath = "/v1/chat/completions"

// chatRequest is the part of a Chat Completions request the proxy reads.
// The request's own settings (temperature, max_tokens, model) are not
// taken: the treatment's model and settings answer every call, so that an
// agent cannot choose a model the treatment did not name. Its tool_choice
// and response_format are its program, and are.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Tools         []chatTool    `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat json.RawMessage `json:"response_format"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// chatToolCall is a tool call on the Chat Completions wire, as an
// assistant message of a request gives it back and as a reply makes it;
// Index numbers a call within a stream's chunks and is absent elsewhere.
type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (t chatTool) declared() (declaredTool, error) {
	if t.Type != "" && t.Type != "function" {
		return declaredTool{}, fmt.Errorf("type: %q is not a function tool", t.Type)
	}
	return declaredTool{"function.name", t.Function.Name, t.Function.Description, t.Function.Parameters}, nil
}

// ChatRequest is a decoded Chat Completions request: what the model port
// is asked, and how the agent wants the answer.
type ChatRequest struct {
	Request models.Request
	// Stream asks for server-sent events; IncludeUsage for a last chunk
	// with the usage.
	Stream, IncludeUsage bool
}

// DecodeChat reads a Chat Completions request body into the model port's
// request. Content given as parts is joined from its text parts; any other
// part (an image, audio) is refused by name, as is a role the port does
// not know. "developer" is read as "system". A history OpenAI refuses is
// refused naming where: tool calls outside an assistant message, a call
// without id or name or whose arguments are neither blank nor a JSON
// object, two calls of one message with one id, a tool message without
// tool_call_id or answering no call of the assistant message just before
// it (only tool messages between them), a call not answered by the tool
// messages right after its assistant message. tool_choice and
// response_format are the request's ToolChoice and Output; one the API
// would refuse (an unknown value, a function not among the tools, a
// json_schema without name or schema) is refused naming the field.
func DecodeChat(body []byte) (ChatRequest, error) {
	var in chatRequest
	if err := decodeBody(body, &in); err != nil {
		return ChatRequest{}, err
	}
	if len(in.Messages) == 0 {
		return ChatRequest{}, fmt.Errorf("messages: none given")
	}
	out := ChatRequest{Stream: in.Stream, IncludeUsage: in.StreamOptions != nil && in.StreamOptions.IncludeUsage}
	made := newMadeCalls()
	for i, m := range in.Messages {
		role := models.Role(m.Role)
		switch role {
		case models.RoleSystem, models.RoleUser, models.RoleAssistant, models.RoleTool:
		case "developer":
			role = models.RoleSystem
		default:
			return ChatRequest{}, fmt.Errorf("messages[%d].role: unknown role %q", i, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return ChatRequest{}, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		msg := models.Message{Role: role, Content: text, ToolCallID: m.ToolCallID}
		if len(m.ToolCalls) > 0 && role != models.RoleAssistant {
			return ChatRequest{}, fmt.Errorf("messages[%d].tool_calls: only an assistant message makes tool calls, not a %s message", i, m.Role)
		}
		if role != models.RoleTool {
			// The tool messages answering an assistant message's calls
			// follow it at once: any other message ends its turn.
			if err := made.closeTurn("call", "tool message", fmt.Sprintf("before messages[%d] (%s)", i, aRole(m.Role))); err != nil {
				return ChatRequest{}, err
			}
		}
		for j, c := range m.ToolCalls {
			at := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
			switch {
			case c.Type != "" && c.Type != "function":
				return ChatRequest{}, fmt.Errorf("%s.type: %q is not a function call", at, c.Type)
			case c.ID == "":
				return ChatRequest{}, fmt.Errorf("%s.id: required", at)
			case c.Function.Name == "":
				return ChatRequest{}, fmt.Errorf("%s.function.name: required", at)
			}
			if err := callArguments(c.Function.Arguments); err != nil {
				return ChatRequest{}, fmt.Errorf("%s.function.arguments: %w", at, err)
			}
			if err := made.made(c.ID, at); err != nil {
				return ChatRequest{}, fmt.Errorf("%s.id: %w", at, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, models.ToolCall{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments})
		}
		if role == models.RoleTool {
			if err := made.answers(m.ToolCallID, "tool call", "of the assistant message just before it"); err != nil {
				return ChatRequest{}, fmt.Errorf("messages[%d].tool_call_id: %w", i, err)
			}
		}
		out.Request.Messages = append(out.Request.Messages, msg)
	}
	tools, err := endRequest(made, "call", "tool message", in.Tools)
	if err != nil {
		return ChatRequest{}, err
	}
	if out.Request.ToolChoice, tools, err = chatToolChoice(in.ToolChoice, tools); err != nil {
		return ChatRequest{}, err
	}
	out.Request.Tools = tools
	if err := checkToolChoice(out.Request.ToolChoice, "tool_choice.function.name", tools); err != nil {
		return ChatRequest{}, err
	}
	if out.Request.Output, err = chatResponseFormat(in.ResponseFormat); err != nil {
		return ChatRequest{}, err
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or an array of
// parts of which only text parts are accepted.
func contentText(raw json.RawMessage) (string, error) {
	return joinedText(raw, func(p textPart) (string, bool) { return p.Text, p.Type == "text" })
}

// textPart is one part of a content given as a list of parts, in any of
// the wires: a text part, a Responses output's refusal, or a part of a
// kind the model port cannot carry.
type textPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// joinedText reads content given as a string, null, or a list of parts,
// joining what partText takes from each part; a part it does not take
// (ok false) is refused, naming its index and kind.
func joinedText(raw json.RawMessage, partText func(textPart) (text string, ok bool)) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []textPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("neither a string nor a list of parts")
	}
	var b strings.Builder
	for i, p := range parts {
		text, ok := partText(p)
		if !ok {
			return "", fmt.Errorf("part %d: %q parts are not supported (text only)", i, p.Type)
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// chatFinish is the Chat Completions finish reason of a reply.
func chatFinish(r models.Reply) string {
	switch {
	case r.Finish == models.FinishRefusal:
		return "content_filter"
	case r.Finish != "":
		return r.Finish
	case len(r.Calls) > 0:
		return models.FinishToolCalls
	}
	return models.FinishStop
}

// chatObject is a Chat Completions response object: the whole completion
// or one chunk of a stream. The fields are in the order the API writes
// them.
type chatObject struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage,omitempty"`
}

// chatChoice is one choice of a chatObject: a completion's holds the
// message, a stream chunk's the delta, and only the last chunk's has a
// finish reason (null before).
type chatChoice struct {
	Index        int        `json:"index"`
	Message      *chatReply `json:"message,omitempty"`
	Delta        *chatDelta `json:"delta,omitempty"`
	FinishReason *string    `json:"finish_reason"`
}

// chatReply is a completion's message: its content null when the reply
// is only calls.
type chatReply struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

// chatDelta is what one stream chunk adds to the message; what it does
// not add is left out.
type chatDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type wireUsage struct {
	PromptTokens     uint64 `json:"prompt_tokens"`
	CompletionTokens uint64 `json:"completion_tokens"`
	TotalTokens      uint64 `json:"total_tokens"`
}

func usageOf(r models.Reply) *wireUsage {
	if r.Usage == nil {
		return nil
	}
	return &wireUsage{PromptTokens: r.Usage.InputTokens, CompletionTokens: r.Usage.OutputTokens, TotalTokens: r.Usage.InputTokens + r.Usage.OutputTokens}
}

func callsOf(r models.Reply, indexed bool) []chatToolCall {
	var out []chatToolCall
	for i, c := range r.Calls {
		w := chatToolCall{ID: c.ID, Type: "function"}
		if indexed {
			w.Index = &i
		}
		w.Function.Name, w.Function.Arguments = c.Name, c.Args
		out = append(out, w)
	}
	return out
}

// EncodeChat is the non-streaming Chat Completions response to a reply.
// Usage is left out when the model reported none.
func EncodeChat(id, model string, created int64, r models.Reply) ([]byte, error) {
	var content *string
	if r.Text != "" || len(r.Calls) == 0 {
		content = &r.Text
	}
	finish := chatFinish(r)
	return json.Marshal(chatObject{id, "chat.completion", created, model,
		[]chatChoice{{Message: &chatReply{Role: "assistant", Content: content, ToolCalls: callsOf(r, false)}, FinishReason: &finish}},
		usageOf(r)})
}

// EncodeChatStream is the streamed Chat Completions response to a reply,
// as the data of each server-sent event in order (the caller frames them
// and ends with "[DONE]"): the text in one chunk, each call whole in one
// chunk, the finish reason, and the usage when asked for and known.
func EncodeChatStream(id, model string, created int64, r models.Reply, includeUsage bool) ([][]byte, error) {
	mk := func(cs []chatChoice, u *wireUsage) chatObject {
		return chatObject{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: cs, Usage: u}
	}
	text := r.Text
	chunks := []chatObject{mk([]chatChoice{{Delta: &chatDelta{Role: "assistant", Content: &text}}}, nil)}
	for _, c := range callsOf(r, true) {
		chunks = append(chunks, mk([]chatChoice{{Delta: &chatDelta{ToolCalls: []chatToolCall{c}}}}, nil))
	}
	finish := chatFinish(r)
	chunks = append(chunks, mk([]chatChoice{{Delta: &chatDelta{}, FinishReason: &finish}}, nil))
	if u := usageOf(r); includeUsage && u != nil {
		chunks = append(chunks, mk([]chatChoice{}, u))
	}
	out := make([][]byte, 0, len(chunks))
	for _, c := range chunks {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
