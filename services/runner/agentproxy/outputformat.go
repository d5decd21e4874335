package agentproxy

import (
	"encoding/json"
	"fmt"

	"github.com/factline/factline/models"
)

// schemaFormat is a json_schema format as the wires spell it (Chat below
// response_format.json_schema, Responses in text.format, Messages in
// output_config.format without name, description or strict).
type schemaFormat struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// output reads a json_schema format at a field: a schema object is
// required, and a name where OpenAI requires one.
func (f schemaFormat) output(at string, needName bool) (*models.Output, error) {
	if needName && f.Name == "" {
		return nil, fmt.Errorf("%s.name: required", at)
	}
	if isNull(f.Schema) {
		return nil, fmt.Errorf("%s.schema: required", at)
	}
	o := &models.Output{Kind: models.OutputJSONSchema, Name: f.Name, Description: f.Description,
		Schema: f.Schema, Strict: f.Strict != nil && *f.Strict}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("%s.schema: not a JSON object", at)
	}
	return o, nil
}

// simpleOutput is an output kind with no schema, by its OpenAI type.
var simpleOutput = map[string]models.OutputKind{"text": models.OutputText, "json_object": models.OutputJSONObject}

// chatResponseFormat reads Chat Completions' response_format.
func chatResponseFormat(raw json.RawMessage) (*models.Output, error) {
	if isNull(raw) {
		return nil, nil
	}
	var v struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	if err := decodeField("response_format", raw, &v); err != nil {
		return nil, err
	}
	if kind, ok := simpleOutput[v.Type]; ok {
		return &models.Output{Kind: kind}, nil
	}
	if v.Type != string(models.OutputJSONSchema) {
		return nil, fmt.Errorf("response_format.type: unknown type %q (text, json_object, json_schema)", v.Type)
	}
	if isNull(v.JSONSchema) {
		return nil, fmt.Errorf("response_format.json_schema: required")
	}
	var f schemaFormat
	if err := decodeField("response_format.json_schema", v.JSONSchema, &f); err != nil {
		return nil, err
	}
	return f.output("response_format.json_schema", true)
}

// responsesTextFormat reads the Responses API's text.format; text's
// other members (verbosity) are settings, not taken.
func responsesTextFormat(raw json.RawMessage) (*models.Output, error) {
	if isNull(raw) {
		return nil, nil
	}
	var text struct {
		Format json.RawMessage `json:"format"`
	}
	if err := decodeField("text", raw, &text); err != nil {
		return nil, err
	}
	if isNull(text.Format) {
		return nil, nil
	}
	var v struct {
		schemaFormat
		Type string `json:"type"`
	}
	if err := decodeField("text.format", text.Format, &v); err != nil {
		return nil, err
	}
	if kind, ok := simpleOutput[v.Type]; ok {
		return &models.Output{Kind: kind}, nil
	}
	if v.Type != string(models.OutputJSONSchema) {
		return nil, fmt.Errorf("text.format.type: unknown type %q (text, json_object, json_schema)", v.Type)
	}
	return v.output("text.format", true)
}

// messagesOutputFormat reads the Messages API's structured output:
// output_config.format, or the beta's top-level output_format, a
// json_schema format (the only type it knows). output_config's other
// member (effort) is a setting, not taken.
func messagesOutputFormat(config, beta json.RawMessage) (*models.Output, error) {
	at, raw := "output_format", beta
	if !isNull(config) {
		var c struct {
			Format json.RawMessage `json:"format"`
		}
		if err := decodeField("output_config", config, &c); err != nil {
			return nil, err
		}
		if !isNull(c.Format) {
			at, raw = "output_config.format", c.Format
		}
	}
	if isNull(raw) {
		return nil, nil
	}
	var v struct {
		schemaFormat
		Type string `json:"type"`
	}
	if err := decodeField(at, raw, &v); err != nil {
		return nil, err
	}
	if v.Type != string(models.OutputJSONSchema) {
		return nil, fmt.Errorf("%s.type: unknown type %q (json_schema)", at, v.Type)
	}
	return v.output(at, false)
}
