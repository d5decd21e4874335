package agentproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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
// an object of type function naming the tool, or one of type
// allowed_tools. name finds a function choice's name in it (Chat nests it
// under function, Responses does not) and nameField is where that is, for
// errors; allowed reads an allowed_tools choice.
//
// allowed_tools lets the model call only some of the request's tools,
// with a mode (auto or required) over those: the port has no such subset,
// so the choice is taken as what the model is asked, the tools it allows
// offered with its mode. It returns the tools the model is offered.
func openAIToolChoice(raw json.RawMessage, tools []models.ToolSpec, nameField string, name func(json.RawMessage) (string, error),
	allowed func(json.RawMessage) (allowedTools, error)) (*models.ToolChoice, []models.ToolSpec, error) {
	if isNull(raw) {
		return nil, tools, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		mode, ok := openAIModes[s]
		if !ok {
			return nil, nil, fmt.Errorf("tool_choice: unknown value %q (auto, none, required, or a function)", s)
		}
		return &models.ToolChoice{Mode: mode}, tools, nil
	}
	var obj struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, fmt.Errorf("tool_choice: neither a string nor an object")
	}
	switch obj.Type {
	case "function":
	case "allowed_tools":
		a, err := allowed(raw)
		if err != nil {
			return nil, nil, err
		}
		return a.take(tools)
	default:
		return nil, nil, fmt.Errorf("tool_choice.type: %q is not supported (function, allowed_tools): the endpoint offers function tools only", obj.Type)
	}
	n, err := name(raw)
	if err != nil {
		return nil, nil, err
	}
	if n == "" {
		return nil, nil, fmt.Errorf("%s: required", nameField)
	}
	return &models.ToolChoice{Mode: models.ToolChoiceTool, Name: n}, tools, nil
}

// allowedTools is an allowed_tools tool choice as read from its wire:
// its mode, the names of the tools it allows, and where the wire puts
// each (for errors).
type allowedTools struct {
	at    string // the object holding mode and tools
	mode  string
	names []string
	// nameAt is where the wire puts the name of the i-th allowed tool.
	nameAt func(i int) string
}

// take is the choice and the tools the model is offered: those of tools
// that a allows, in the request's order, with a's mode; refused when the
// mode is not one OpenAI takes or a tool allowed is not among the
// request's.
func (a allowedTools) take(tools []models.ToolSpec) (*models.ToolChoice, []models.ToolSpec, error) {
	mode, ok := map[string]models.ToolChoiceMode{"auto": models.ToolChoiceAuto, "required": models.ToolChoiceRequired}[a.mode]
	if !ok {
		return nil, nil, fmt.Errorf("%s.mode: unknown value %q (auto, required)", a.at, a.mode)
	}
	if len(a.names) == 0 {
		return nil, nil, fmt.Errorf("%s.tools: none given", a.at)
	}
	allow := map[string]bool{}
	for i, n := range a.names {
		if !slices.ContainsFunc(tools, func(t models.ToolSpec) bool { return t.Name == n }) {
			return nil, nil, fmt.Errorf("%s: tool %q is not among the request's tools", a.nameAt(i), n)
		}
		allow[n] = true
	}
	var offered []models.ToolSpec
	for _, t := range tools {
		if allow[t.Name] {
			offered = append(offered, t)
		}
	}
	return &models.ToolChoice{Mode: mode}, offered, nil
}

// allowedTool is one tool an allowed_tools choice allows; only function
// tools are offered by the endpoint.
type allowedTool struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// allowedNames reads the names of an allowed_tools choice's tools, each
// a function tool, where name is the name as the wire places it.
func allowedNames(at string, tools []allowedTool, name func(allowedTool) string) ([]string, error) {
	var names []string
	for i, t := range tools {
		if t.Type != "function" {
			return nil, fmt.Errorf("%s.tools[%d].type: %q is not supported (function): the endpoint offers function tools only", at, i, t.Type)
		}
		names = append(names, name(t))
	}
	return names, nil
}

// chatToolChoice reads Chat Completions' tool_choice and returns the
// tools the model is offered.
func chatToolChoice(raw json.RawMessage, tools []models.ToolSpec) (*models.ToolChoice, []models.ToolSpec, error) {
	return openAIToolChoice(raw, tools, "tool_choice.function.name", func(raw json.RawMessage) (string, error) {
		var v struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		err := decodeField("tool_choice", raw, &v)
		return v.Function.Name, err
	}, func(raw json.RawMessage) (allowedTools, error) {
		const at = "tool_choice.allowed_tools"
		var v struct {
			AllowedTools struct {
				Mode  string        `json:"mode"`
				Tools []allowedTool `json:"tools"`
			} `json:"allowed_tools"`
		}
		if err := decodeField("tool_choice", raw, &v); err != nil {
			return allowedTools{}, err
		}
		names, err := allowedNames(at, v.AllowedTools.Tools, func(t allowedTool) string { return t.Function.Name })
		return allowedTools{at: at, mode: v.AllowedTools.Mode, names: names,
			nameAt: func(i int) string { return fmt.Sprintf("%s.tools[%d].function.name", at, i) }}, err
	})
}

// responsesToolChoice reads the Responses API's tool_choice and returns
// the tools the model is offered.
func responsesToolChoice(raw json.RawMessage, tools []models.ToolSpec) (*models.ToolChoice, []models.ToolSpec, error) {
	return openAIToolChoice(raw, tools, "tool_choice.name", func(raw json.RawMessage) (string, error) {
		var v struct {
			Name string `json:"name"`
		}
		err := decodeField("tool_choice", raw, &v)
		return v.Name, err
	}, func(raw json.RawMessage) (allowedTools, error) {
		const at = "tool_choice"
		var v struct {
			Mode  string        `json:"mode"`
			Tools []allowedTool `json:"tools"`
		}
		if err := decodeField(at, raw, &v); err != nil {
			return allowedTools{}, err
		}
		names, err := allowedNames(at, v.Tools, func(t allowedTool) string { return t.Name })
		return allowedTools{at: at, mode: v.Mode, names: names,
			nameAt: func(i int) string { return fmt.Sprintf("%s.tools[%d].name", at, i) }}, err
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
