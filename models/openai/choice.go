package openai

import (
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/factline/factline/models"
)

// toolChoice maps a request's tool choice onto Chat Completions'
// tool_choice: a mode's string, or the named function a forced tool is.
func toolChoice(c models.ToolChoice) (sdk.ChatCompletionToolChoiceOptionUnionParam, error) {
	switch c.Mode {
	case models.ToolChoiceAuto, models.ToolChoiceNone, models.ToolChoiceRequired:
		return sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt(string(c.Mode))}, nil
	case models.ToolChoiceTool:
		return sdk.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &sdk.ChatCompletionNamedToolChoiceParam{
			Function: sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: c.Name}}}, nil
	}
	return sdk.ChatCompletionToolChoiceOptionUnionParam{}, fmt.Errorf("unknown mode %q", c.Mode)
}

// responseFormat maps a request's output format onto Chat Completions'
// response_format.
func responseFormat(o models.Output) (sdk.ChatCompletionNewParamsResponseFormatUnion, error) {
	switch o.Kind {
	case models.OutputText:
		return sdk.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}}, nil
	case models.OutputJSONObject:
		return sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}, nil
	case models.OutputJSONSchema:
		s, err := schema(o.Schema)
		if err != nil {
			return sdk.ChatCompletionNewParamsResponseFormatUnion{}, fmt.Errorf("schema: %w", err)
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: o.SchemaName(), Schema: s}
		if o.Description != "" {
			js.Description = param.NewOpt(o.Description)
		}
		if o.Strict {
			js.Strict = param.NewOpt(true)
		}
		return sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}, nil
	}
	return sdk.ChatCompletionNewParamsResponseFormatUnion{}, fmt.Errorf("unknown kind %q", o.Kind)
}
