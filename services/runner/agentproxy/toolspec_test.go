package agentproxy

import (
	"strings"
	"testing"

	"github.com/factline/factline/models"
)

// Every wire declares a tool alike to the model port: its name, its
// description and its parameters schema as given, an empty object schema
// where none (or null) was given; a tool with no name is refused naming
// the field.
func TestEveryWireDeclaresToolsAlike(t *testing.T) {
	decoders := map[string]func(tools string) ([]models.ToolSpec, error){
		"chat": func(tools string) ([]models.ToolSpec, error) {
			r, err := DecodeChat([]byte(`{"messages":[{"role":"user","content":"x"}],"tools":` + tools + `}`))
			return r.Request.Tools, err
		},
		"responses": func(tools string) ([]models.ToolSpec, error) {
			r, _, err := DecodeResponses([]byte(`{"input":"x","tools":` + tools + `}`))
			return r.Tools, err
		},
		"messages": func(tools string) ([]models.ToolSpec, error) {
			r, _, err := DecodeMessages([]byte(`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":` + tools + `}`))
			return r.Tools, err
		},
	}
	// Each wire's spelling of: f with a schema, g without one, h with a
	// null one; and of a nameless tool, with the field its error names.
	given := map[string][2]string{
		"chat": {`[{"type":"function","function":{"name":"f","description":"does f","parameters":{"type":"object","required":["a"]}}},` +
			`{"type":"function","function":{"name":"g"}},{"function":{"name":"h","parameters":null}}]`,
			`[{"type":"function","function":{"description":"x"}}]`},
		"responses": {`[{"type":"function","name":"f","description":"does f","parameters":{"type":"object","required":["a"]}},` +
			`{"type":"function","name":"g"},{"type":"function","name":"h","parameters":null}]`,
			`[{"type":"function","description":"x"}]`},
		"messages": {`[{"name":"f","description":"does f","input_schema":{"type":"object","required":["a"]}},` +
			`{"name":"g"},{"type":"custom","name":"h","input_schema":null}]`,
			`[{"description":"x"}]`},
	}
	nameless := map[string]string{"chat": "tools[0].function.name: required", "responses": "tools[0].name: required", "messages": "tools[0].name: required"}
	empty := `{"type":"object","properties":{}}`
	for wire, decode := range decoders {
		got, err := decode(given[wire][0])
		if err != nil {
			t.Fatalf("%s: %v", wire, err)
		}
		want := []models.ToolSpec{
			{Name: "f", Description: "does f", Parameters: []byte(`{"type":"object","required":["a"]}`)},
			{Name: "g", Parameters: []byte(empty)},
			{Name: "h", Parameters: []byte(empty)},
		}
		if len(got) != len(want) {
			t.Fatalf("%s: tools %+v, want %d", wire, got, len(want))
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].Description != want[i].Description || string(got[i].Parameters) != string(want[i].Parameters) {
				t.Errorf("%s: tool %d is %s %q %s, want %s %q %s", wire, i, got[i].Name, got[i].Description, got[i].Parameters, want[i].Name, want[i].Description, want[i].Parameters)
			}
		}
		if _, err := decode(given[wire][1]); err == nil || !strings.Contains(err.Error(), nameless[wire]) {
			t.Errorf("%s: a nameless tool: error %v, want one saying %q", wire, err, nameless[wire])
		}
	}
}
