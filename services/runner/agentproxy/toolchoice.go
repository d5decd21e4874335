package agentproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/factline/factline/models"
)

// An agent's tool choice and output format are its program, not sampling
// settings: an agent that forces a tool or asks for a JSON schema parses
// the answer it asked for. Each wire's decoder reads them into the port's
// request, which the treatment's model is sent with them; a value the
// provider would refuse is refused here, naming the field as the wire
// spells it.

// isNull reports whether a field is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// decodeField reads the object at a field of the request into v; a value
// of the wrong shape is refused naming the field (and the member below
// it) as the wire spells them.
func decodeField(at string, raw json.RawMessage, v any) error {
	err := json.Unmarshal(raw, v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Errorf("%s.%s: want %s, got %s", at, typeErr.Field, jsonKind(typeErr.Type), jsonValue(typeErr.Value))
	case errors.As(err, &typeErr):
		return fmt.Errorf("%s: want an object, got %s", at, jsonValue(typeErr.Value))
	}
	return fmt.Errorf("%s: %w", at, err)
}

// openAIModes are the tool choice modes OpenAI's wires spell as a string.
var openAIModes = map[string]models.ToolChoiceMode{
	"auto": models.ToolChoiceAuto, "none": models.ToolChoiceNone, "required": models.ToolChoiceRequired,
}

// openAIToolChoice reads an OpenAI wire's tool_choice: a mode's string,
// or an object of type function naming the tool, where name finds the
// name in it (Chat nests it under function, Responses does not) and
// nameField is where that is, for errors.
func openAIToolChoice(raw json.RawMessage, nameField string, name func(json.RawMessage) (string, error)) (*models.ToolChoice, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		mode, ok := openAIModes[s]
		if !ok {
			return nil, fmt.Errorf("tool_choice: unknown value %q (auto, none, required, or a function)", s)
		}
		return &models.ToolChoice{Mode: mode}, nil
	}
	var obj struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("tool_choice: neither a string nor an object")
	}
	if obj.Type != "function" {
		return nil, fmt.Errorf("tool_choice.type: %q is not supported (function): the endpoint offers function tools only", obj.Type)
	}
	n, err := name(raw)
	if err != nil {
		return nil, err
	}
	if n == "" {
		return nil, fmt.Errorf("%s: required", nameField)
	}
	return &models.ToolChoice{Mode: models.ToolChoiceTool, Name: n}, nil
}

// chatToolChoice reads Chat Completions' tool_choice.
func chatToolChoice(raw json.RawMessage) (*models.ToolChoice, error) {
	return openAIToolChoice(raw, "tool_choice.function.name", func(raw json.RawMessage) (string, error) {
		var v struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		err := decodeField("tool_choice", raw, &v)
		return v.Function.Name, err
	})
}

// responsesToolChoice reads the Responses API's tool_choice.
func responsesToolChoice(raw json.RawMessage) (*models.ToolChoice, error) {
	return openAIToolChoice(raw, "tool_choice.name", func(raw json.RawMessage) (string, error) {
		var v struct {
			Name string `json:"name"`
		}
		err := decodeField("tool_choice", raw, &v)
		return v.Name, err
	})
}

// messagesModes are the Messages API's tool choice types.
var messagesModes = map[string]models.ToolChoiceMode{
	"auto": models.ToolChoiceAuto, "none": models.ToolChoiceNone, "any": models.ToolChoiceRequired, "tool": models.ToolChoiceTool,
}

// messagesToolChoice reads the Messages API's tool_choice, an object
// whose type is auto, any, tool (naming it) or none.
// disable_parallel_tool_use is a setting like Chat's parallel_tool_calls:
// not taken.
func messagesToolChoice(raw json.RawMessage) (*models.ToolChoice, error) {
	if isNull(raw) {
		return nil, nil
	}
	var v struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := decodeField("tool_choice", raw, &v); err != nil {
		return nil, err
	}
	mode, ok := messagesModes[v.Type]
	if !ok {
		return nil, fmt.Errorf("tool_choice.type: unknown type %q (auto, any, tool, none)", v.Type)
	}
	if mode == models.ToolChoiceTool && v.Name == "" {
		return nil, fmt.Errorf("tool_choice.name: required")
	}
	if mode != models.ToolChoiceTool {
		v.Name = ""
	}
	return &models.ToolChoice{Mode: mode, Name: v.Name}, nil
}

// checkToolChoice refuses a choice the request's tools cannot meet: a
// forced tool not among them (nameField is where the wire names it), or
// required with none offered.
func checkToolChoice(c *models.ToolChoice, nameField string, tools []models.ToolSpec) error {
	if c == nil {
		return nil
	}
	if err := c.Check(tools); err != nil {
		if c.Mode == models.ToolChoiceTool {
			return fmt.Errorf("%s: %w", nameField, err)
		}
		return fmt.Errorf("tool_choice: %w", err)
	}
	return nil
}
