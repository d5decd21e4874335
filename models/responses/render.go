package responses

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3/packages/param"
	sdk "github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// Render returns the exact JSON body Complete sends for req: the digest of
// the output is the digest of what went over the wire. The mapping: a
// system, user or assistant message is an input message of that role
// (an assistant's empty text is left out), each call of an assistant
// message a function_call item (its call_id, name and arguments as the
// model gave them), a tool message a function_call_output item for its
// call; tools are function tools, not strict (the harness validates
// arguments itself). store is false: every call carries its whole
// context, and nothing is kept at the provider between calls. The model
// is Settings.Model, else Config.Model. Render fails with ErrConfig when
// there is no model and with ErrBadRequest for an unknown role, tool
// parameters or an output schema that are not a JSON object, an unknown
// tool choice mode or output kind, or a seed (the Responses API takes
// none). The request's ToolChoice and Output are tool_choice and
// text.format. The body never holds the API key.
func (m *Model) Render(req models.Request) ([]byte, error) {
	_, body, err := m.build(req)
	return body, err
}

// build maps req onto SDK parameters and marshals them.
func (m *Model) build(req models.Request) (sdk.ResponseNewParams, []byte, error) {
	var p sdk.ResponseNewParams
	model := req.Settings.Model
	if model == "" {
		model = m.cfg.Model
	}
	if model == "" {
		return p, nil, configError("no model: set Settings.Model or Config.Model")
	}
	p.Model = shared.ResponsesModel(model)
	p.Store = param.NewOpt(false)
	s := req.Settings
	if s.Seed != nil {
		return p, nil, badRequest("seed: the Responses API takes none")
	}
	if s.Temperature != nil {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.MaxOutputTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(s.MaxOutputTokens))
	}
	if s.ReasoningEffort != "" {
		p.Reasoning.Effort = shared.ReasoningEffort(s.ReasoningEffort)
	}
	items := make(sdk.ResponseInputParam, 0, len(req.Messages))
	for i, msg := range req.Messages {
		its, err := inputItems(msg)
		if err != nil {
			return p, nil, badRequest("message %d: %v", i, err)
		}
		items = append(items, its...)
	}
	p.Input = sdk.ResponseNewParamsInputUnion{OfInputItemList: items}
	for i, tool := range req.Tools {
		var params map[string]any
		if len(bytes.TrimSpace(tool.Parameters)) > 0 {
			v, err := httpmodel.Schema(tool.Parameters)
			if err != nil {
				return p, nil, badRequest("tool %d (%s): parameters: %v", i, tool.Name, err)
			}
			params = v
		}
		t := sdk.ToolParamOfFunction(tool.Name, params, false)
		if tool.Description != "" {
			t.OfFunction.Description = param.NewOpt(tool.Description)
		}
		p.Tools = append(p.Tools, t)
	}
	if c := req.SentToolChoice(); c != nil {
		tc, err := toolChoice(*c)
		if err != nil {
			return p, nil, badRequest("tool_choice: %v", err)
		}
		p.ToolChoice = tc
	}
	if req.Output != nil {
		f, err := textFormat(*req.Output)
		if err != nil {
			return p, nil, badRequest("text.format: %v", err)
		}
		p.Text.Format = f
	}
	body, err := json.Marshal(p)
	if err != nil {
		return p, nil, badRequest("marshal request: %v", err)
	}
	return p, body, nil
}

func badRequest(format string, args ...any) *models.Error {
	return &models.Error{Kind: models.ErrBadRequest, Provider: Provider, Err: fmt.Errorf(format, args...)}
}

// inputItems maps one provider-neutral message onto input items.
func inputItems(msg models.Message) ([]sdk.ResponseInputItemUnionParam, error) {
	switch msg.Role {
	case models.RoleSystem:
		return []sdk.ResponseInputItemUnionParam{message(msg.Content, sdk.EasyInputMessageRoleSystem)}, nil
	case models.RoleUser:
		return []sdk.ResponseInputItemUnionParam{message(msg.Content, sdk.EasyInputMessageRoleUser)}, nil
	case models.RoleTool:
		out := sdk.ResponseInputItemParamOfFunctionCallOutput(msg.Content)
		out.OfFunctionCallOutput.CallID = param.NewOpt(msg.ToolCallID)
		return []sdk.ResponseInputItemUnionParam{out}, nil
	case models.RoleAssistant:
		var out []sdk.ResponseInputItemUnionParam
		if msg.Content != "" {
			out = append(out, message(msg.Content, sdk.EasyInputMessageRoleAssistant))
		}
		for _, c := range msg.ToolCalls {
			out = append(out, sdk.ResponseInputItemParamOfFunctionCall(c.Args, c.ID, c.Name))
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown role %q", msg.Role)
}

// message is an input message of role, its type named (the API takes it
// without, but a reader of the request should not have to know that).
func message(text string, role sdk.EasyInputMessageRole) sdk.ResponseInputItemUnionParam {
	item := sdk.ResponseInputItemParamOfMessage(text, role)
	item.OfMessage.Type = sdk.EasyInputMessageTypeMessage
	return item
}

// Reserve returns the worst-case cost of req in cost units: the input
// estimate (rendered bytes / BytesPerToken, rounded up) at the dearest
// input price and the output allowance (Settings.MaxOutputTokens, else
// ReserveOutputTokens), rounded up. 0 when the prices are unknown or the
// request does not render.
func (m *Model) Reserve(req models.Request) uint64 {
	if !m.prices.Known() {
		return 0
	}
	_, body, err := m.build(req)
	if err != nil {
		return 0
	}
	in := (uint64(len(body)) + uint64(m.cfg.BytesPerToken) - 1) / uint64(m.cfg.BytesPerToken)
	out := uint64(m.cfg.ReserveOutputTokens)
	if req.Settings.MaxOutputTokens > 0 {
		out = uint64(req.Settings.MaxOutputTokens)
	}
	return m.prices.Reserve(in, out)
}
