package agentproxy

import (
	"encoding/json"
	"fmt"

	"github.com/factline/factline/models"
)

// emptySchema is the parameters schema of a tool declared without one:
// the model port always carries a schema object. A constant, so that
// each request gets bytes of its own.
const emptySchema = `{"type":"object","properties":{}}`

// toolSpec is a function tool a request declares, as the model port
// carries it. Every wire requires the name; field is where the wire
// spells it, for the error.
func toolSpec(field, name, description string, params json.RawMessage) (models.ToolSpec, error) {
	if name == "" {
		return models.ToolSpec{}, fmt.Errorf("%s: required", field)
	}
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(emptySchema)
	}
	return models.ToolSpec{Name: name, Description: description, Parameters: params}, nil
}
