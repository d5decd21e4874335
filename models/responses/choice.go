package responses

import (
	"fmt"

	"github.com/openai/openai-go/v3/packages/param"
	sdk "github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/internal/httpmodel"
)

// toolChoice maps a request's tool choice onto the Responses API's
// tool_choice: a mode's string, or the function a forced tool is.
func toolChoice(c models.ToolChoice) (sdk.ResponseNewParamsToolChoiceUnion, error) {
	switch c.Mode {
	case models.ToolChoiceAuto, models.ToolChoiceNone, models.ToolChoiceRequired:
		return sdk.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: param.NewOpt(sdk.ToolChoiceOptions(c.Mode))}, nil
	case models.ToolChoiceTool:
		return sdk.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &sdk.ToolChoiceFunctionParam{Name: c.Name}}, nil
	}
	return sdk.ResponseNewParamsToolChoiceUnion{}, fmt.Errorf("unknown mode %q", c.Mode)
}

// textFormat maps a request's output format onto the Responses API's
// text.format.
func textFormat(o models.Output) (sdk.ResponseFormatTextConfigUnionParam, error) {
	switch o.Kind {
	case models.OutputText:
		return sdk.ResponseFormatTextConfigUnionParam{OfText: &shared.ResponseFormatTextParam{}}, nil
	case models.OutputJSONObject:
		return sdk.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}, nil
	case models.OutputJSONSchema:
		s, err := httpmodel.Schema(o.Schema)
		if err != nil {
			return sdk.ResponseFormatTextConfigUnionParam{}, fmt.Errorf("schema: %w", err)
		}
		js := &sdk.ResponseFormatTextJSONSchemaConfigParam{Name: o.SchemaName(), Schema: s}
		if o.Description != "" {
			js.Description = param.NewOpt(o.Description)
		}
		if o.Strict {
			js.Strict = param.NewOpt(true)
		}
		return sdk.ResponseFormatTextConfigUnionParam{OfJSONSchema: js}, nil
	}
	return sdk.ResponseFormatTextConfigUnionParam{}, fmt.Errorf("unknown kind %q", o.Kind)
}
