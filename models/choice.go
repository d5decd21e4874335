package models

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ToolChoiceMode is how a request lets the model use its tools.
type ToolChoiceMode string

// Tool choice modes, as every wire knows them under its own names.
const (
	// ToolChoiceAuto: the model decides (the providers' default).
	ToolChoiceAuto ToolChoiceMode = "auto"
	// ToolChoiceNone: the model must not call a tool.
	ToolChoiceNone ToolChoiceMode = "none"
	// ToolChoiceRequired: the model must call some tool (Anthropic's "any").
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceTool: the model must call the tool Name.
	ToolChoiceTool ToolChoiceMode = "tool"
)

// ToolChoice is a request's demand on tool use. It is the agent's
// program, not a sampling setting: an agent that forces a tool relies on
// the call, so it is passed to the model rather than fixed by the
// treatment.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode"`
	// Name is the tool ToolChoiceTool forces; empty for the other modes.
	Name string `json:"name,omitempty"`
}

// Check reports whether c is a choice a provider would take with tools
// offered: a known mode, a name exactly when the mode forces a tool, and
// that name among the tools (some tool, for required).
func (c ToolChoice) Check(tools []ToolSpec) error {
	switch c.Mode {
	case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		if c.Name != "" {
			return fmt.Errorf("mode %q names no tool, got name %q", c.Mode, c.Name)
		}
		if c.Mode == ToolChoiceRequired && len(tools) == 0 {
			return fmt.Errorf("mode %q, but the request offers no tools", c.Mode)
		}
		return nil
	case ToolChoiceTool:
		if c.Name == "" {
			return fmt.Errorf("mode %q needs the name of a tool", c.Mode)
		}
		for _, t := range tools {
			if t.Name == c.Name {
				return nil
			}
		}
		return fmt.Errorf("tool %q is not among the request's tools", c.Name)
	}
	return fmt.Errorf("unknown mode %q (auto, none, required, tool)", c.Mode)
}

// OutputKind is the shape a request asks the model's text to take.
type OutputKind string

// Output kinds.
const (
	// OutputText: free text (the providers' default).
	OutputText OutputKind = "text"
	// OutputJSONObject: any JSON object (OpenAI's JSON mode).
	OutputJSONObject OutputKind = "json_object"
	// OutputJSONSchema: JSON that validates against Schema (structured
	// output).
	OutputJSONSchema OutputKind = "json_schema"
)

// OutputName is the name a json_schema format is sent under to a wire
// that requires one (OpenAI's) when the request gives none, as an agent
// speaking Anthropic's wire, which has no place for it, does not.
const OutputName = "output"

// SchemaName is the name o's json_schema is sent under on a wire that
// requires one: its own, or OutputName.
func (o Output) SchemaName() string {
	if o.Name == "" {
		return OutputName
	}
	return o.Name
}

// SentToolChoice is the tool choice a client puts on the wire: none when
// the request offers no tools, since no tool can be called whatever the
// choice says, and OpenAI's wires refuse a tool_choice without tools.
func (r Request) SentToolChoice() *ToolChoice {
	if len(r.Tools) == 0 {
		return nil
	}
	return r.ToolChoice
}

// Output is the format a request asks the model's text to take: like
// ToolChoice, the agent's program (an agent parses the answer it asked
// for), passed to the model.
type Output struct {
	Kind OutputKind `json:"kind"`
	// Name, Description, Schema and Strict describe a json_schema format
	// (OpenAI requires the name; Anthropic has no place for it). Schema
	// is the JSON schema object as the agent wrote it.
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// Check reports whether o is a format a provider would take: a known
// kind, and for json_schema a schema that is a JSON object.
func (o Output) Check() error {
	switch o.Kind {
	case OutputText, OutputJSONObject:
		if len(o.Schema) > 0 {
			return fmt.Errorf("kind %q takes no schema", o.Kind)
		}
		return nil
	case OutputJSONSchema:
		s := bytes.TrimSpace(o.Schema)
		if len(s) == 0 || string(s) == "null" {
			return fmt.Errorf("kind %q needs a schema", o.Kind)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(s, &obj); err != nil {
			return fmt.Errorf("schema: not a JSON object")
		}
		return nil
	}
	return fmt.Errorf("unknown kind %q (text, json_object, json_schema)", o.Kind)
}
