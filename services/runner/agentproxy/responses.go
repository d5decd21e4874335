package agentproxy

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/factline/factline/models"
)

// ResponsesPath is where OpenAI's Responses API is served.
const ResponsesPath = "/v1/responses"

// responsesRequest is the part of a Responses API request the proxy
// reads. As for Chat Completions, the agent's model and settings are not
// taken.
type responsesRequest struct {
	Model              string          `json:"model"`
	Instructions       *string         `json:"instructions"`
	Input              json.RawMessage `json:"input"`
	Tools              []responsesTool `json:"tools"`
	Stream             bool            `json:"stream"`
	PreviousResponseID *string         `json:"previous_response_id"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Text               json.RawMessage `json:"text"`
}

type responsesTool struct {
	namedTool
	Parameters json.RawMessage `json:"parameters"`
}

func (t responsesTool) declared() (declaredTool, error) {
	if t.Type != "function" {
		return declaredTool{}, fmt.Errorf("type: %q is not a function tool: the endpoint serves no hosted tools", t.Type)
	}
	return declaredTool{"name", t.Name, t.Description, t.Parameters}, nil
}

// responsesItem is one input item: a message (typed "message" or, in the
// easy form, untyped with a role), a function_call, a
// function_call_output, or a reasoning item.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// DecodeResponses reads a Responses API request body into the model
// port's request, and whether the agent asked for a stream. instructions
// is a first system message; input is a string (one user message) or a
// list of items: a message of role user, assistant, system or developer
// (read as system) whose content is a string or text parts
// (input_text, output_text); a function_call, joined to the assistant
// message before it; a function_call_output, a tool message. Reasoning
// items are dropped: the endpoint never sends any, and the port has no
// place for them. Anything else — an image or file part, an
// item_reference (the server resolves one naming a message item it
// answered before decoding: resolveItemReferences), previous_response_id
// (the endpoint keeps no responses),
// a tool that is not a function (a hosted tool such as web_search, which
// the endpoint cannot serve) — is refused naming where, as is a history
// OpenAI refuses: a function_call whose arguments are neither blank nor a
// JSON object, a function_call with the call_id of one still unanswered,
// a function_call_output answering no unanswered function_call made
// before it, a function_call no function_call_output after it answers.
// Unlike Chat Completions, the output need not follow its call at once
// (OpenAI pairs them by call_id anywhere after it). tool_choice and
// text.format are the request's ToolChoice and Output, refused naming the
// field where the API would refuse them.
func DecodeResponses(body []byte) (models.Request, bool, error) {
	var in responsesRequest
	if err := decodeBody(body, &in); err != nil {
		return models.Request{}, false, err
	}
	if in.PreviousResponseID != nil && *in.PreviousResponseID != "" {
		return models.Request{}, false, fmt.Errorf("previous_response_id: not supported: the endpoint keeps no responses; send the whole input (store: false)")
	}
	var out models.Request
	if in.Instructions != nil && *in.Instructions != "" {
		out.Messages = append(out.Messages, models.Message{Role: models.RoleSystem, Content: *in.Instructions})
	}
	items, err := inputItems(in.Input)
	if err != nil {
		return models.Request{}, false, err
	}
	made := newMadeCalls()
	for i, it := range items {
		where := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "message", "":
			role := models.Role(it.Role)
			switch role {
			case models.RoleSystem, models.RoleUser, models.RoleAssistant:
			case "developer":
				role = models.RoleSystem
			default:
				return models.Request{}, false, fmt.Errorf("%s.role: unknown role %q", where, it.Role)
			}
			text, err := responsesText(it.Content)
			if err != nil {
				return models.Request{}, false, fmt.Errorf("%s.content: %w", where, err)
			}
			out.Messages = append(out.Messages, models.Message{Role: role, Content: text})
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return models.Request{}, false, fmt.Errorf("%s: a function_call needs call_id and name", where)
			}
			if err := callArguments(it.Arguments); err != nil {
				return models.Request{}, false, fmt.Errorf("%s.arguments: %w", where, err)
			}
			if err := made.made(it.CallID, where); err != nil {
				return models.Request{}, false, fmt.Errorf("%s.call_id: %w", where, err)
			}
			call := models.ToolCall{ID: it.CallID, Name: it.Name, Args: it.Arguments}
			// Calls made in one reply follow its message: they are that
			// assistant message's calls, as the port holds them.
			if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == models.RoleAssistant {
				out.Messages[n-1].ToolCalls = append(out.Messages[n-1].ToolCalls, call)
			} else {
				out.Messages = append(out.Messages, models.Message{Role: models.RoleAssistant, ToolCalls: []models.ToolCall{call}})
			}
		case "function_call_output":
			if err := made.answers(it.CallID, "function_call", "still unanswered"); err != nil {
				return models.Request{}, false, fmt.Errorf("%s.call_id: %w", where, err)
			}
			text, err := responsesText(it.Output)
			if err != nil {
				return models.Request{}, false, fmt.Errorf("%s.output: %w", where, err)
			}
			out.Messages = append(out.Messages, models.Message{Role: models.RoleTool, Content: text, ToolCallID: it.CallID})
		case "reasoning":
		default:
			return models.Request{}, false, fmt.Errorf("%s.type: %q items are not supported (message, function_call, function_call_output, reasoning)", where, it.Type)
		}
	}
	if len(out.Messages) == 0 {
		return models.Request{}, false, fmt.Errorf("input: none given")
	}
	tools, err := endRequest(made, "function_call", "function_call_output", in.Tools)
	if err != nil {
		return models.Request{}, false, err
	}
	if out.ToolChoice, tools, err = responsesToolChoice(in.ToolChoice, tools); err != nil {
		return models.Request{}, false, err
	}
	out.Tools = tools
	if err := checkToolChoice(out.ToolChoice, "tool_choice.name", tools); err != nil {
		return models.Request{}, false, err
	}
	if out.Output, err = responsesTextFormat(in.Text); err != nil {
		return models.Request{}, false, err
	}
	return out, in.Stream, nil
}

// inputItems reads input: a string is one user message.
func inputItems(raw json.RawMessage) ([]responsesItem, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("input: required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []responsesItem{{Type: "message", Role: "user", Content: raw}}, nil
	}
	var items []responsesItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("input: neither a string nor a list of items: %w", err)
	}
	return items, nil
}

// responsesText reads a message's content or a call's output: a string,
// or a list of text parts (a refusal read as its text).
func responsesText(raw json.RawMessage) (string, error) {
	return joinedText(raw, func(p textPart) (string, bool) {
		switch p.Type {
		case "input_text", "output_text", "text":
			return p.Text, true
		case "refusal":
			return p.Refusal, true
		}
		return "", false
	})
}

// responsesUsage is the Responses API's usage object.
type responsesUsage struct {
	InputTokens        uint64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens uint64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        uint64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens uint64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens uint64 `json:"total_tokens"`
}

// responsesUsageOf is a completed response's usage. The wire has no
// unknown usage: OpenAI's completed responses always hold the object, and
// the AI SDK's responses model refuses a null one (@ai-sdk/openai 3.0.88,
// the one inside @mastra/core 1.71: "Invalid JSON response"; streamed, the
// step's finish reason turns "other" and the agent calls again; 3.0.141
// takes null). A reply without usage is sent
// as zeros, while the turn's model.replied keeps it unknown, as on the
// Messages wire.
func responsesUsageOf(r models.Reply) *responsesUsage {
	if r.Usage == nil {
		return &responsesUsage{}
	}
	u := &responsesUsage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		TotalTokens: r.Usage.InputTokens + r.Usage.OutputTokens}
	if r.Usage.CachedInputTokens != nil {
		u.InputTokensDetails.CachedTokens = *r.Usage.CachedInputTokens
	}
	if r.Usage.ReasoningTokens != nil {
		u.OutputTokensDetails.ReasoningTokens = *r.Usage.ReasoningTokens
	}
	return u
}

// responsesPart is a content part of an output message. An output_text
// part always holds "annotations" (an empty array: the endpoint makes
// none), as OpenAI's do: the Vercel AI SDK refuses a response whose part
// lacks it. A pointer, since omitempty drops an empty slice.
type responsesPart struct {
	Type        string      `json:"type"`
	Text        *string     `json:"text,omitempty"`
	Refusal     *string     `json:"refusal,omitempty"`
	Annotations *[]struct{} `json:"annotations,omitempty"`
}

// responsesOutput is one output item: a message or a function_call.
type responsesOutput struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	Role      string          `json:"role,omitempty"`
	Content   []responsesPart `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments *string         `json:"arguments,omitempty"`
}

// MarshalJSON writes a message item's "content" always, an empty array
// too (the item a stream opens has no part yet), as OpenAI's API does: the
// openai node client's stream helper appends each part to it and fails
// on an item without one. Other items have no content.
func (o responsesOutput) MarshalJSON() ([]byte, error) {
	type plain responsesOutput
	if o.Type != "message" {
		return json.Marshal(plain(o))
	}
	content := o.Content
	if content == nil {
		content = []responsesPart{}
	}
	return json.Marshal(struct {
		plain
		Content []responsesPart `json:"content"`
	}{plain(o), content})
}

// responseObject is the response the API answers with, and that its
// stream's first and last events carry.
type responseObject struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	CreatedAt         int64              `json:"created_at"`
	Status            string             `json:"status"`
	Model             string             `json:"model"`
	Output            []responsesOutput  `json:"output"`
	Usage             *responsesUsage    `json:"usage"`
	IncompleteDetails *map[string]string `json:"incomplete_details"`
	Error             *struct{}          `json:"error"`
	ParallelToolCalls bool               `json:"parallel_tool_calls"`
	ToolChoice        string             `json:"tool_choice"`
	Tools             []struct{}         `json:"tools"`
}

// responseOf is the completed response object of a reply: its message
// (text, or the refusal) first when there is one, then a function_call
// item per call. A reply cut at its length is "incomplete", with
// max_output_tokens as the reason.
func responseOf(id, model string, created int64, r models.Reply) responseObject {
	out := responseObject{ID: id, Object: "response", CreatedAt: created, Status: "completed", Model: model,
		Output: []responsesOutput{}, Usage: responsesUsageOf(r), ToolChoice: "auto", ParallelToolCalls: true, Tools: []struct{}{}}
	if r.Text != "" || len(r.Calls) == 0 {
		text := r.Text
		part := responsesPart{Type: "output_text", Text: &text, Annotations: &[]struct{}{}}
		if r.Finish == models.FinishRefusal {
			part = responsesPart{Type: "refusal", Refusal: &text}
		}
		out.Output = append(out.Output, responsesOutput{Type: "message", ID: "msg_" + id, Status: "completed", Role: "assistant",
			Content: []responsesPart{part}})
	}
	for i, c := range r.Calls {
		args := c.Args
		out.Output = append(out.Output, responsesOutput{Type: "function_call", ID: fmt.Sprintf("fc_%s_%d", id, i), Status: "completed",
			CallID: c.ID, Name: c.Name, Arguments: &args})
	}
	if r.Finish == models.FinishLength {
		out.Status = "incomplete"
		out.IncompleteDetails = &map[string]string{"reason": "max_output_tokens"}
	}
	return out
}

// EncodeResponses is the non-streaming Responses API response to a reply.
func EncodeResponses(id, model string, created int64, r models.Reply) ([]byte, error) {
	return json.Marshal(responseOf(id, model, created, r))
}

// Event is one server-sent event: its name and its JSON data.
type Event struct {
	Name string
	Data []byte
}

// eventStream collects a stream's events. Both the Messages and the
// Responses wires repeat an event's name as its data's "type"; a numbered
// stream (Responses) also gives each its "sequence_number", from 0.
type eventStream struct {
	events   []Event
	numbered bool
}

// add appends the event name whose data is fields (which it completes).
func (s *eventStream) add(name string, fields map[string]any) error {
	fields["type"] = name
	if s.numbered {
		fields["sequence_number"] = len(s.events)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	s.events = append(s.events, Event{Name: name, Data: b})
	return nil
}

// EncodeResponsesStream is the streamed Responses API response to a reply,
// as the events the API sends, in order: response.created and
// response.in_progress (no output yet); per output item
// response.output_item.added, its content (for a message
// response.content_part.added, one response.output_text.delta with the
// whole text, response.output_text.done, response.content_part.done; for
// a call one response.function_call_arguments.delta and .done) and
// response.output_item.done; then response.completed (or
// response.incomplete) carrying the whole response with its usage. Each
// event's data names its type and a sequence_number.
func EncodeResponsesStream(id, model string, created int64, r models.Reply) ([]Event, error) {
	final := responseOf(id, model, created, r)
	stream := eventStream{numbered: true}
	add := stream.add
	start := final
	start.Status, start.Output, start.Usage, start.IncompleteDetails = "in_progress", []responsesOutput{}, nil, nil
	if err := add("response.created", map[string]any{"response": start}); err != nil {
		return nil, err
	}
	if err := add("response.in_progress", map[string]any{"response": start}); err != nil {
		return nil, err
	}
	for i, item := range final.Output {
		opening := item
		opening.Status = "in_progress"
		if item.Type == "message" {
			opening.Content = []responsesPart{}
		} else {
			empty := ""
			opening.Arguments = &empty
		}
		if err := add("response.output_item.added", map[string]any{"output_index": i, "item": opening}); err != nil {
			return nil, err
		}
		var err error
		if item.Type == "message" {
			err = messageEvents(add, i, item)
		} else {
			err = add("response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": i, "delta": *item.Arguments})
			if err == nil {
				err = add("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": i,
					"name": item.Name, "arguments": *item.Arguments})
			}
		}
		if err != nil {
			return nil, err
		}
		if err := add("response.output_item.done", map[string]any{"output_index": i, "item": item}); err != nil {
			return nil, err
		}
	}
	last := "response.completed"
	if final.Status == "incomplete" {
		last = "response.incomplete"
	}
	if err := add(last, map[string]any{"response": final}); err != nil {
		return nil, err
	}
	return stream.events, nil
}

// messageEvents adds the events of an output message's one part: the
// part opened empty, its whole text (or refusal) as one delta, the text
// done and the part done.
func messageEvents(add func(string, map[string]any) error, index int, item responsesOutput) error {
	part := item.Content[0]
	at := func(kv ...any) map[string]any {
		m := map[string]any{"item_id": item.ID, "output_index": index, "content_index": 0}
		for j := 0; j+1 < len(kv); j += 2 {
			m[kv[j].(string)] = kv[j+1]
		}
		return m
	}
	blank, opened := "", part
	kind, text := "output_text", ""
	if part.Type == "refusal" {
		opened.Refusal, kind, text = &blank, "refusal", *part.Refusal
	} else {
		opened.Text, text = &blank, *part.Text
	}
	doneField := "text"
	if kind == "refusal" {
		doneField = "refusal"
	}
	for _, e := range []struct {
		name   string
		fields map[string]any
	}{
		{"response.content_part.added", at("part", opened)},
		{"response." + kind + ".delta", at("delta", text, "logprobs", []struct{}{})},
		{"response." + kind + ".done", at(doneField, text, "logprobs", []struct{}{})},
		{"response.content_part.done", at("part", part)},
	} {
		if err := add(e.name, e.fields); err != nil {
			return err
		}
	}
	return nil
}

// rememberItems keeps the message item of the Responses answer id (its
// text or refusal) as an input item, under the ID the answer gave it, for
// a later item_reference to name. The Vercel AI SDK's responses model
// (store on, its default) sends an earlier answer's message back as an
// item_reference to its ID, as OpenAI, which stores what it answered,
// resolves; the endpoint resolves only its own answers of this attempt.
func (s *Server) rememberItems(id string, r models.Reply) {
	for _, o := range responseOf(id, "", 0, r).Output {
		if o.Type != "message" {
			continue
		}
		item, err := json.Marshal(map[string]any{"type": "message", "role": "assistant", "content": o.Content})
		if err != nil {
			continue
		}
		s.itemsMu.Lock()
		if s.items == nil {
			s.items = map[string]json.RawMessage{}
		}
		s.items[o.ID] = item
		s.itemsMu.Unlock()
	}
}

// resolveItemReferences replaces each item_reference of a Responses
// request's input by the message item this endpoint answered under that
// ID. A body without one is returned as it is; a reference to an ID this
// endpoint never answered is an error naming where.
func (s *Server) resolveItemReferences(body []byte) ([]byte, error) {
	if !bytes.Contains(body, []byte("item_reference")) {
		return body, nil
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return body, nil // the decoder says what is wrong with it
	}
	var input []json.RawMessage
	if err := json.Unmarshal(req["input"], &input); err != nil {
		return body, nil
	}
	changed := false
	for i, raw := range input {
		var ref struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(raw, &ref) != nil || ref.Type != "item_reference" {
			continue
		}
		s.itemsMu.Lock()
		item, ok := s.items[ref.ID]
		s.itemsMu.Unlock()
		if !ok {
			return nil, fmt.Errorf("input[%d].id: item_reference %q names no message this endpoint answered (it resolves its own answers' message items alone; send the item itself)", i, ref.ID)
		}
		input[i], changed = item, true
	}
	if !changed {
		return body, nil
	}
	in, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	req["input"] = in
	return json.Marshal(req)
}
