package agentproxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/factline/factline/models"
)

// choiceOf is a request's tool choice and output as compact JSON ("" for
// none), for comparing.
func choiceOf(t *testing.T, req models.Request) (string, string) {
	t.Helper()
	var tc, out string
	if req.ToolChoice != nil {
		b, _ := json.Marshal(req.ToolChoice)
		tc = string(b)
	}
	if req.Output != nil {
		b, _ := json.Marshal(req.Output)
		out = string(b)
	}
	return tc, out
}

type choiceCase struct {
	extra, wantTC, wantOut string
}

func checkChoices(t *testing.T, decode func([]byte) (models.Request, error), base string, cases []choiceCase) {
	t.Helper()
	for _, c := range cases {
		body := strings.TrimSuffix(base, "}") + c.extra + "}"
		req, err := decode([]byte(body))
		if err != nil {
			t.Errorf("%s: %v", c.extra, err)
			continue
		}
		tc, out := choiceOf(t, req)
		if tc != c.wantTC || out != c.wantOut {
			t.Errorf("%s:\n got tool choice %s, output %s\nwant tool choice %s, output %s", c.extra, tc, out, c.wantTC, c.wantOut)
		}
	}
}

func checkRefusals(t *testing.T, decode func([]byte) (models.Request, error), base string, cases map[string]string) {
	t.Helper()
	for extra, want := range cases {
		body := strings.TrimSuffix(base, "}") + extra + "}"
		_, err := decode([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", extra, err, want)
		}
	}
}

const schemaJSON = `{"type":"object","properties":{"answer":{"type":"string"}}}`

// Chat Completions' tool_choice and response_format reach the port's
// request.
func TestDecodeChatReadsToolChoiceAndResponseFormat(t *testing.T) {
	base := `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	decode := func(b []byte) (models.Request, error) { r, err := DecodeChat(b); return r.Request, err }
	checkChoices(t, decode, base, []choiceCase{
		{``, ``, ``},
		{`,"tool_choice":null,"response_format":null`, ``, ``},
		{`,"tool_choice":"auto"`, `{"mode":"auto"}`, ``},
		{`,"tool_choice":"none"`, `{"mode":"none"}`, ``},
		{`,"tool_choice":"required"`, `{"mode":"required"}`, ``},
		{`,"tool_choice":{"type":"function","function":{"name":"f"}}`, `{"mode":"tool","name":"f"}`, ``},
		{`,"response_format":{"type":"text"}`, ``, `{"kind":"text"}`},
		{`,"response_format":{"type":"json_object"}`, ``, `{"kind":"json_object"}`},
		{`,"response_format":{"type":"json_schema","json_schema":{"name":"v","description":"d","strict":true,"schema":` + schemaJSON + `}}`,
			``, `{"kind":"json_schema","name":"v","description":"d","schema":` + schemaJSON + `,"strict":true}`},
	})
	checkRefusals(t, decode, base, map[string]string{
		`,"tool_choice":"any"`: `tool_choice: unknown value "any"`,
		`,"tool_choice":5`:     `tool_choice: neither a string nor an object`,
		`,"tool_choice":{"type":"function","function":{"name":"g"}}`:                        `tool_choice.function.name: tool "g" is not among the request's tools`,
		`,"tool_choice":{"type":"function","function":{}}`:                                  `tool_choice.function.name: required`,
		`,"tool_choice":{"type":"allowed_tools"}`:                                           `tool_choice.allowed_tools.mode: unknown value ""`,
		`,"tool_choice":{"type":"custom","custom":{"name":"f"}}`:                            `tool_choice.type: "custom" is not supported`,
		`,"response_format":{"type":"json_schema","json_schema":{"name":"v"}}`:              `response_format.json_schema.schema: required`,
		`,"response_format":{"type":"json_schema"}`:                                         `response_format.json_schema: required`,
		`,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`:             `response_format.json_schema.name: required`,
		`,"response_format":{"type":"json_schema","json_schema":{"name":"v","schema":[1]}}`: `response_format.json_schema.schema: not a JSON object`,
		`,"response_format":{"type":"xml"}`:                                                 `response_format.type: unknown type "xml"`,
		`,"response_format":"json"`:                                                         `response_format`,
	})
	noTools := `{"messages":[{"role":"user","content":"x"}]}`
	checkRefusals(t, decode, noTools, map[string]string{
		`,"tool_choice":"required"`: `tool_choice: mode "required", but the request offers no tools`,
	})
}

// The Responses API's tool_choice and text.format reach the port's
// request; text's other settings (verbosity) are not taken.
func TestDecodeResponsesReadsToolChoiceAndTextFormat(t *testing.T) {
	base := `{"input":"x","tools":[{"type":"function","name":"f"}]}`
	decode := func(b []byte) (models.Request, error) { r, _, err := DecodeResponses(b); return r, err }
	checkChoices(t, decode, base, []choiceCase{
		{``, ``, ``},
		{`,"tool_choice":"required"`, `{"mode":"required"}`, ``},
		{`,"tool_choice":{"type":"function","name":"f"}`, `{"mode":"tool","name":"f"}`, ``},
		{`,"text":{"verbosity":"low"}`, ``, ``},
		{`,"text":{"format":{"type":"json_object"}}`, ``, `{"kind":"json_object"}`},
		{`,"text":{"format":{"type":"json_schema","name":"v","strict":true,"schema":` + schemaJSON + `}}`,
			``, `{"kind":"json_schema","name":"v","schema":` + schemaJSON + `,"strict":true}`},
	})
	checkRefusals(t, decode, base, map[string]string{
		`,"tool_choice":{"type":"function","name":"g"}`:         `tool_choice.name: tool "g" is not among the request's tools`,
		`,"tool_choice":{"type":"web_search_preview"}`:          `tool_choice.type: "web_search_preview" is not supported`,
		`,"tool_choice":"sometimes"`:                            `tool_choice: unknown value "sometimes"`,
		`,"text":{"format":{"type":"json_schema","name":"v"}}`:  `text.format.schema: required`,
		`,"text":{"format":{"type":"json_schema","schema":{}}}`: `text.format.name: required`,
		`,"text":{"format":{"type":"yaml"}}`:                    `text.format.type: unknown type "yaml"`,
	})
}

// The Messages API's tool_choice and structured output
// (output_config.format, and the beta's output_format) reach the port's
// request; disable_parallel_tool_use and effort are settings, not taken.
func TestDecodeMessagesReadsToolChoiceAndOutputFormat(t *testing.T) {
	base := `{"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`
	decode := func(b []byte) (models.Request, error) { r, _, err := DecodeMessages(b); return r, err }
	checkChoices(t, decode, base, []choiceCase{
		{``, ``, ``},
		{`,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`, `{"mode":"auto"}`, ``},
		{`,"tool_choice":{"type":"any"}`, `{"mode":"required"}`, ``},
		{`,"tool_choice":{"type":"none"}`, `{"mode":"none"}`, ``},
		{`,"tool_choice":{"type":"tool","name":"f"}`, `{"mode":"tool","name":"f"}`, ``},
		{`,"output_config":{"effort":"low"}`, ``, ``},
		{`,"output_config":{"format":{"type":"json_schema","schema":` + schemaJSON + `}}`, ``, `{"kind":"json_schema","schema":` + schemaJSON + `}`},
		{`,"output_format":{"type":"json_schema","schema":` + schemaJSON + `}`, ``, `{"kind":"json_schema","schema":` + schemaJSON + `}`},
	})
	checkRefusals(t, decode, base, map[string]string{
		`,"tool_choice":{"type":"tool","name":"g"}`:            `tool_choice.name: tool "g" is not among the request's tools`,
		`,"tool_choice":{"type":"tool"}`:                       `tool_choice.name: required`,
		`,"tool_choice":{"type":"required"}`:                   `tool_choice.type: unknown type "required"`,
		`,"tool_choice":"auto"`:                                `tool_choice`,
		`,"output_config":{"format":{"type":"json_schema"}}`:   `output_config.format.schema: required`,
		`,"output_config":{"format":{"type":"json_object"}}`:   `output_config.format.type: unknown type "json_object"`,
		`,"output_format":{"type":"json_schema","schema":"x"}`: `output_format.schema: not a JSON object`,
	})
}

// An allowed_tools tool choice (Chat's and Responses', each spelt its
// own way) is taken as the model is asked: the tools it allows, in the
// request's order, offered with its mode. One naming a tool the request
// lacks, a tool of another type, no tools or a mode OpenAI lacks is
// refused, naming where.
func TestDecodeAllowedToolsOffersTheToolsAllowed(t *testing.T) {
	chat := func(b []byte) (models.Request, error) { r, err := DecodeChat(b); return r.Request, err }
	responses := func(b []byte) (models.Request, error) { r, _, err := DecodeResponses(b); return r, err }
	for _, c := range []struct {
		name   string
		decode func([]byte) (models.Request, error)
		base   string
		choice func(mode string, names ...string) string
		bad    map[string]string
	}{
		{"chat", chat,
			`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}},{"type":"function","function":{"name":"h"}}]}`,
			func(mode string, names ...string) string {
				var tools []string
				for _, n := range names {
					tools = append(tools, `{"type":"function","function":{"name":"`+n+`"}}`)
				}
				return `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"` + mode + `","tools":[` + strings.Join(tools, ",") + `]}}`
			},
			map[string]string{
				`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"x"}}]}}`: `tool_choice.allowed_tools.tools[1].function.name: tool "x" is not among the request's tools`,
				`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"custom","custom":{"name":"f"}}]}}`:                                                 `tool_choice.allowed_tools.tools[0].type: "custom" is not supported`,
				`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`:                                                                                        `tool_choice.allowed_tools.tools: none given`,
				`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"none","tools":[{"type":"function","function":{"name":"f"}}]}}`:                                             `tool_choice.allowed_tools.mode: unknown value "none"`,
			}},
		{"responses", responses,
			`{"input":"x","tools":[{"type":"function","name":"f"},{"type":"function","name":"g"},{"type":"function","name":"h"}]}`,
			func(mode string, names ...string) string {
				var tools []string
				for _, n := range names {
					tools = append(tools, `{"type":"function","name":"`+n+`"}`)
				}
				return `,"tool_choice":{"type":"allowed_tools","mode":"` + mode + `","tools":[` + strings.Join(tools, ",") + `]}`
			},
			map[string]string{
				`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"x"}]}`:    `tool_choice.tools[0].name: tool "x" is not among the request's tools`,
				`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"mcp","server_label":"s"}]}`: `tool_choice.tools[0].type: "mcp" is not supported`,
				`,"tool_choice":{"type":"allowed_tools","mode":"required"}`:                                         `tool_choice.tools: none given`,
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, w := range []struct {
				mode, want string
				allow      []string
				offered    string
			}{
				{"required", `{"mode":"required"}`, []string{"h", "f"}, "f,h"},
				{"auto", `{"mode":"auto"}`, []string{"g"}, "g"},
			} {
				body := strings.TrimSuffix(c.base, "}") + c.choice(w.mode, w.allow...) + "}"
				req, err := c.decode([]byte(body))
				if err != nil {
					t.Fatalf("%s: %v", body, err)
				}
				tc, _ := choiceOf(t, req)
				var names []string
				for _, tool := range req.Tools {
					names = append(names, tool.Name)
				}
				if tc != w.want || strings.Join(names, ",") != w.offered {
					t.Errorf("allowed %v, mode %s: tool choice %s over tools %v; want %s over %s", w.allow, w.mode, tc, names, w.want, w.offered)
				}
			}
			checkRefusals(t, c.decode, c.base, c.bad)
		})
	}
}
