package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// Efforts are the reasoning efforts the Messages API takes (its
// output_config.effort).
var Efforts = []string{"low", "medium", "high", "xhigh", "max"}

// Render returns the exact JSON body Complete sends for req: the digest of
// the output is the digest of what went over the wire. The mapping:
// leading system messages are the top-level system blocks, a later one a
// system message; a user message is a user text block; an assistant
// message is its text block (none when empty) and a tool_use block per
// call, with the call's arguments as its input object; a tool message is
// a tool_result block for its call. Consecutive messages of one role are
// one message of several blocks, as the API combines them anyway: the
// tool_result blocks answering one assistant turn travel together. The
// model is Settings.Model, else Config.Model; max_tokens is
// Settings.MaxOutputTokens, else Config.MaxTokens. Render fails with
// ErrConfig when there is no model and with ErrBadRequest for what the API
// cannot carry: an unknown role, tool parameters or call arguments that
// are not a JSON object, a temperature, top_p or seed (the Messages API
// the SDK speaks takes none), an effort it does not know, or an output
// format other than text and json_schema (it has no JSON mode). The
// request's ToolChoice is tool_choice (required is "any"), a json_schema
// Output is output_config.format. The body never holds the API key.
func (m *Model) Render(req models.Request) ([]byte, error) {
	_, body, err := m.build(req)
	return body, err
}

// build maps req onto SDK parameters and marshals them.
func (m *Model) build(req models.Request) (sdk.MessageNewParams, []byte, error) {
	var p sdk.MessageNewParams
	p.Model = sdk.Model(req.Settings.Model)
	if p.Model == "" {
		p.Model = sdk.Model(m.cfg.Model)
	}
	if p.Model == "" {
		return p, nil, configError("no model: set Settings.Model or Config.Model (%s)", EnvModel)
	}
	s := req.Settings
	switch {
	case s.Temperature != nil:
		return p, nil, badRequest("temperature: the Messages API takes none")
	case s.TopP != nil:
		return p, nil, badRequest("top_p: the Messages API takes none")
	case s.Seed != nil:
		return p, nil, badRequest("seed: the Messages API takes none")
	case s.ReasoningEffort != "" && !slices.Contains(Efforts, s.ReasoningEffort):
		return p, nil, badRequest("reasoning effort %q: the Messages API takes one of %v", s.ReasoningEffort, Efforts)
	}
	if s.ReasoningEffort != "" {
		p.OutputConfig.Effort = sdk.OutputConfigEffort(s.ReasoningEffort)
	}
	p.MaxTokens = int64(m.cfg.MaxTokens)
	if s.MaxOutputTokens > 0 {
		p.MaxTokens = int64(s.MaxOutputTokens)
	}
	msgs, system, err := messages(req.Messages)
	if err != nil {
		return p, nil, err
	}
	p.System, p.Messages = system, msgs
	for i, tool := range req.Tools {
		t := sdk.ToolParam{Name: tool.Name}
		if tool.Description != "" {
			t.Description = sdk.String(tool.Description)
		}
		if len(bytes.TrimSpace(tool.Parameters)) > 0 {
			in, err := inputSchema(tool.Parameters)
			if err != nil {
				return p, nil, badRequest("tool %d (%s): parameters: %v", i, tool.Name, err)
			}
			t.InputSchema = in
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &t})
	}
	if c := req.SentToolChoice(); c != nil {
		tc, err := toolChoice(*c)
		if err != nil {
			return p, nil, badRequest("tool_choice: %v", err)
		}
		p.ToolChoice = tc
	}
	if req.Output != nil {
		f, ok, err := outputFormat(*req.Output)
		if err != nil {
			return p, nil, badRequest("output %v", err)
		}
		if ok {
			p.OutputConfig.Format = f
		}
	}
	body, err := p.MarshalJSON()
	if err != nil {
		return p, nil, badRequest("marshal request: %v", err)
	}
	return p, body, nil
}

func badRequest(format string, args ...any) *models.Error {
	return &models.Error{Kind: models.ErrBadRequest, Provider: Provider, Err: fmt.Errorf(format, args...)}
}

// messages maps the provider-neutral context: the leading system messages
// as system blocks, the rest as messages of blocks.
func messages(in []models.Message) ([]sdk.MessageParam, []sdk.TextBlockParam, error) {
	var system []sdk.TextBlockParam
	i := 0
	for ; i < len(in) && in[i].Role == models.RoleSystem; i++ {
		if in[i].Content != "" {
			system = append(system, sdk.TextBlockParam{Text: in[i].Content})
		}
	}
	var out []sdk.MessageParam
	for ; i < len(in); i++ {
		msg := in[i]
		role, blocks, err := blocksOf(msg)
		if err != nil {
			return nil, nil, badRequest("message %d: %v", i, err)
		}
		if len(blocks) == 0 {
			// An empty text block is refused by the API; an empty
			// message says nothing.
			continue
		}
		if n := len(out); n > 0 && roleOf(out[n-1]) == role {
			appendBlocks(&out[n-1], blocks)
			continue
		}
		out = append(out, messageOf(role, blocks))
	}
	return out, system, nil
}

// blocksOf maps one message onto the role it is sent under and its blocks.
func blocksOf(msg models.Message) (models.Role, []sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	switch msg.Role {
	case models.RoleSystem, models.RoleUser:
		if msg.Content != "" {
			blocks = append(blocks, sdk.NewTextBlock(msg.Content))
		}
		return msg.Role, blocks, nil
	case models.RoleTool:
		r := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
		if msg.Content != "" {
			r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
		}
		return models.RoleUser, append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &r}), nil
	case models.RoleAssistant:
		if msg.Content != "" {
			blocks = append(blocks, sdk.NewTextBlock(msg.Content))
		}
		for _, c := range msg.ToolCalls {
			input, err := callInput(c.Args)
			if err != nil {
				return "", nil, fmt.Errorf("tool call %s (%s): %v", c.ID, c.Name, err)
			}
			blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input, c.Name))
		}
		return models.RoleAssistant, blocks, nil
	}
	return "", nil, fmt.Errorf("unknown role %q", msg.Role)
}

func roleOf(p sdk.MessageParam) models.Role {
	switch {
	case p.OfUser != nil:
		return models.RoleUser
	case p.OfAssistant != nil:
		return models.RoleAssistant
	}
	return models.RoleSystem
}

func messageOf(role models.Role, blocks []sdk.ContentBlockParamUnion) sdk.MessageParam {
	switch role {
	case models.RoleUser:
		return sdk.NewUserMessage(blocks...)
	case models.RoleAssistant:
		return sdk.NewAssistantMessage(blocks...)
	}
	text := make([]sdk.TextBlockParam, 0, len(blocks))
	for _, b := range blocks {
		text = append(text, *b.OfText)
	}
	return sdk.MessageParam{OfSystem: &sdk.SystemMessageParam{Content: text}}
}

func appendBlocks(p *sdk.MessageParam, blocks []sdk.ContentBlockParamUnion) {
	switch {
	case p.OfUser != nil:
		p.OfUser.Content = append(p.OfUser.Content, blocks...)
	case p.OfAssistant != nil:
		p.OfAssistant.Content = append(p.OfAssistant.Content, blocks...)
	default:
		for _, b := range blocks {
			p.OfSystem.Content = append(p.OfSystem.Content, *b.OfText)
		}
	}
}

// callInput is a call's arguments as the tool_use block's input: the
// JSON object the model gave, kept byte for byte ("" is {}).
func callInput(args string) (json.RawMessage, error) {
	if len(bytes.TrimSpace([]byte(args))) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %q", httpmodel.ClipTo(args, 120))
	}
	return json.RawMessage(args), nil
}

// inputSchema is a tool's JSON schema object as the API's input_schema:
// its keywords as they are, with "type": "object" added when absent, keys
// sorted (the SDK writes its map of extra keywords in no fixed order, and
// Render must be deterministic).
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return sdk.ToolInputSchemaParam{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if v == nil {
		return sdk.ToolInputSchemaParam{}, fmt.Errorf("not a JSON object: null")
	}
	if t, ok := v["type"]; !ok {
		v["type"] = json.RawMessage(`"object"`)
	} else if string(bytes.TrimSpace(t)) != `"object"` {
		return sdk.ToolInputSchemaParam{}, fmt.Errorf("type %s: an input schema is an object", t)
	}
	canonical, err := json.Marshal(v) // map keys sorted
	if err != nil {
		return sdk.ToolInputSchemaParam{}, err
	}
	return param.Override[sdk.ToolInputSchemaParam](json.RawMessage(canonical)), nil
}
