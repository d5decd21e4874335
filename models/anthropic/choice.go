package anthropic

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/factline/factline/models"
)

// toolChoice maps a request's tool choice onto the Messages API's
// tool_choice, whose "any" is the port's required.
func toolChoice(c models.ToolChoice) (sdk.ToolChoiceUnionParam, error) {
	switch c.Mode {
	case models.ToolChoiceAuto:
		return sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}, nil
	case models.ToolChoiceNone:
		return sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}, nil
	case models.ToolChoiceRequired:
		return sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}, nil
	case models.ToolChoiceTool:
		return sdk.ToolChoiceParamOfTool(c.Name), nil
	}
	return sdk.ToolChoiceUnionParam{}, fmt.Errorf("unknown mode %q", c.Mode)
}

// outputFormat maps a request's output format onto the Messages API's
// output_config.format, and false for text, the API's default, which it
// has no format for. The API's structured output takes a JSON schema and
// nothing else: the schema's name, description and strictness have no
// place (its output is always held to the schema), and JSON mode
// (json_object) is refused rather than sent as free text.
func outputFormat(o models.Output) (sdk.JSONOutputFormatParam, bool, error) {
	switch o.Kind {
	case models.OutputText:
		return sdk.JSONOutputFormatParam{}, false, nil
	case models.OutputJSONObject:
		return sdk.JSONOutputFormatParam{}, false, fmt.Errorf("kind %q: the Messages API has no JSON mode, only a json_schema format (output_config.format)", o.Kind)
	case models.OutputJSONSchema:
		var s map[string]json.RawMessage
		if err := json.Unmarshal(o.Schema, &s); err != nil || s == nil {
			return sdk.JSONOutputFormatParam{}, false, fmt.Errorf("schema: not a JSON object")
		}
		// The schema's bytes as the agent wrote them, under a format
		// whose own keys are sorted: the render is deterministic.
		raw, err := json.Marshal(map[string]json.RawMessage{"type": json.RawMessage(`"json_schema"`), "schema": o.Schema})
		if err != nil {
			return sdk.JSONOutputFormatParam{}, false, fmt.Errorf("schema: %w", err)
		}
		return param.Override[sdk.JSONOutputFormatParam](json.RawMessage(raw)), true, nil
	}
	return sdk.JSONOutputFormatParam{}, false, fmt.Errorf("unknown kind %q", o.Kind)
}
