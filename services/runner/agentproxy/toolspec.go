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

// declaredTool is a function tool as any wire declares it. nameField is
// where the wire spells the name below tools[i], for the error.
type declaredTool struct {
	nameField, name, description string
	params                       json.RawMessage
}

// namedTool is what the Messages and Responses wires spell alike in a
// tool's declaration; they name its schema differently.
type namedTool struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// wireTool is one wire's tool declaration: declared reads it, or says
// (below tools[i]) why the endpoint cannot serve a tool of its type.
type wireTool interface {
	declared() (declaredTool, error)
}

// toolSpecs reads the tools a request declares, as the model port carries
// them. Every wire requires the name.
func toolSpecs[T wireTool](tools []T) ([]models.ToolSpec, error) {
	var out []models.ToolSpec
	for i, t := range tools {
		d, err := t.declared()
		if err != nil {
			return nil, fmt.Errorf("tools[%d].%w", i, err)
		}
		if d.name == "" {
			return nil, fmt.Errorf("tools[%d].%s: required", i, d.nameField)
		}
		params := d.params
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(emptySchema)
		}
		out = append(out, models.ToolSpec{Name: d.name, Description: d.description, Parameters: params})
	}
	return out, nil
}

// endRequest ends a request's decoding as every wire does: its last turn
// must have every call answered (call and result are how the wire names
// them), and then the tools it declares are read.
func endRequest[T wireTool](made *madeCalls, call, result string, tools []T) ([]models.ToolSpec, error) {
	if err := made.closeTurn(call, result, "after it"); err != nil {
		return nil, err
	}
	return toolSpecs(tools)
}
