package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// Render returns the exact JSON body Complete POSTs for req: the SDK's
// Chat Completions parameters built from req and marshalled by the SDK.
// Complete sends these very bytes (it renders again and hands the bytes to
// the SDK as the raw request body), so the digest of Render's output is the
// digest of what went over the wire. The model is Settings.Model, else
// Config.Model. Render fails with ErrConfig when there is no model and with
// ErrBadRequest for an unknown role, tool parameters or an output schema
// that are not a JSON object, or an unknown tool choice mode or output
// kind. The request's ToolChoice and Output are tool_choice and
// response_format. The body never holds the API key: the key travels only in the
// Authorization header.
func (m *Model) Render(req models.Request) ([]byte, error) {
	_, body, err := m.build(req)
	return body, err
}

// build maps req onto SDK parameters and marshals them.
func (m *Model) build(req models.Request) (sdk.ChatCompletionNewParams, []byte, error) {
	var p sdk.ChatCompletionNewParams
	p.Model = req.Settings.Model
	if p.Model == "" {
		p.Model = m.cfg.Model
	}
	if p.Model == "" {
		return p, nil, configError("no model: set Settings.Model or Config.Model (%s)", EnvModel)
	}
	p.Messages = make([]sdk.ChatCompletionMessageParamUnion, 0, len(req.Messages))
	for i, msg := range req.Messages {
		mp, err := messageParam(msg)
		if err != nil {
			return p, nil, badRequest("message %d: %v", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for i, tool := range req.Tools {
		def := shared.FunctionDefinitionParam{Name: tool.Name}
		if tool.Description != "" {
			def.Description = param.NewOpt(tool.Description)
		}
		if len(bytes.TrimSpace(tool.Parameters)) > 0 {
			params, err := schema(tool.Parameters)
			if err != nil {
				return p, nil, badRequest("tool %d (%s): parameters: %v", i, tool.Name, err)
			}
			def.Parameters = params
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
	}
	if c := req.SentToolChoice(); c != nil {
		tc, err := toolChoice(*c)
		if err != nil {
			return p, nil, badRequest("tool_choice: %v", err)
		}
		p.ToolChoice = tc
	}
	if req.Output != nil {
		rf, err := responseFormat(*req.Output)
		if err != nil {
			return p, nil, badRequest("response_format: %v", err)
		}
		p.ResponseFormat = rf
	}
	s := req.Settings
	if s.Temperature != nil {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.Seed != nil {
		p.Seed = param.NewOpt(*s.Seed)
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(s.ReasoningEffort)
	}
	if s.MaxOutputTokens > 0 {
		if m.cfg.MaxTokensField == MaxTokens {
			p.MaxTokens = param.NewOpt(int64(s.MaxOutputTokens))
		} else {
			p.MaxCompletionTokens = param.NewOpt(int64(s.MaxOutputTokens))
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

// messageParam maps one provider-neutral message.
func messageParam(msg models.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case models.RoleSystem:
		return sdk.SystemMessage(msg.Content), nil
	case models.RoleUser:
		return sdk.UserMessage(msg.Content), nil
	case models.RoleTool:
		return sdk.ToolMessage(msg.Content, msg.ToolCallID), nil
	case models.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(msg.Content)
		}
		for _, c := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       c.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Args},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
}

// schema decodes a tool's JSON schema, keeping integers exact.
func schema(raw json.RawMessage) (shared.FunctionParameters, error) {
	return httpmodel.Schema(raw)
}

// Reserve returns the worst-case cost of req in cost units: the input
// estimate (rendered bytes / BytesPerToken, rounded up) and the output
// allowance (Settings.MaxOutputTokens, else ReserveOutputTokens) at the
// configured prices, rounded up. With an unknown price (0) it returns 0:
// the budget cannot bound what it cannot price. A request that does not
// render also reserves 0: Complete refuses it without calling the provider.
func (m *Model) Reserve(req models.Request) uint64 {
	if !m.cfg.priced() {
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
	return cost(in, out, m.cfg.InputPrice, m.cfg.OutputPrice)
}

// cost is ceil((in*inPrice + out*outPrice) / 1e6), saturating at the
// largest uint64 instead of overflowing.
func cost(in, out, inPrice, outPrice uint64) uint64 {
	return httpmodel.Cost(httpmodel.Priced{Tokens: in, Price: inPrice}, httpmodel.Priced{Tokens: out, Price: outPrice})
}
