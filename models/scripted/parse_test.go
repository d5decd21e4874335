package scripted

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/models"
)

func u64(v uint64) *uint64 { return &v }

func TestParseGood(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want *Model
	}{
		{
			name: "minimal turn gets defaults",
			src:  "turns:\n  - text: hello\n",
			want: &Model{name: "script", turns: []turn{{text: "hello", finish: "stop"}}},
		},
		{
			name: "empty turn is an empty stop reply",
			src:  "turns: [{}]\n",
			want: &Model{name: "script", turns: []turn{{finish: "stop"}}},
		},
		{
			name: "model name",
			src:  "model: judge-1\nturns: [{text: ok}]\n",
			want: &Model{name: "judge-1", turns: []turn{{text: "ok", finish: "stop"}}},
		},
		{
			name: "calls with default ids, sorted compact args, raw args and no args",
			src: `turns:
  - calls:
      - name: read_file
        args: {path: "a<b>&c", opts: {z: 1, a: [true, null, 2.5]}}
      - id: mine
        name: write_file
        args_raw: '{"path": '
      - name: list
  - calls:
      - name: again
        args: {}
`,
			want: &Model{name: "script", turns: []turn{
				{finish: "tool_calls", calls: []models.ToolCall{
					{ID: "call-1-1", Name: "read_file", Args: `{"opts":{"a":[true,null,2.5],"z":1},"path":"a<b>&c"}`},
					{ID: "mine", Name: "write_file", Args: `{"path": `},
					{ID: "call-1-3", Name: "list", Args: `{}`},
				}},
				{finish: "tool_calls", calls: []models.ToolCall{{ID: "call-2-1", Name: "again", Args: `{}`}}},
			}},
		},
		{
			name: "usage, cost, reserve and finish",
			src: `turns:
  - text: partial
    usage: {input_tokens: 100, output_tokens: 7, cost: 12}
    reserve: 40
    finish: length
  - text: no
    usage: {input_tokens: 5, output_tokens: 1}
    finish: refusal
`,
			want: &Model{name: "script", turns: []turn{
				{text: "partial", usage: &models.Usage{InputTokens: 100, OutputTokens: 7, Cost: u64(12)}, reserve: 40, finish: "length"},
				{text: "no", usage: &models.Usage{InputTokens: 5, OutputTokens: 1}, finish: "refusal"},
			}},
		},
		{
			name: "null usage is unknown usage",
			src:  "turns:\n  - text: a\n    usage: ~\n",
			want: &Model{name: "script", turns: []turn{{text: "a", finish: "stop"}}},
		},
		{
			name: "finish may disagree with the calls",
			src:  "turns:\n  - calls: [{name: x}]\n    finish: stop\n",
			want: &Model{name: "script", turns: []turn{{finish: "stop", calls: []models.ToolCall{{ID: "call-1-1", Name: "x", Args: "{}"}}}}},
		},
		{
			name: "error turns with delay, retry_after and reserve",
			src: `turns:
  - error: rate_limited
    retry_after: 1500ms
    reserve: 3
  - error: timeout
    delay: 2s
  - {error: unavailable}
  - {error: refused}
  - {error: bad_response}
  - {error: bad_request}
`,
			want: &Model{name: "script", turns: []turn{
				{errKind: models.ErrRateLimited, retryAfter: 1500 * time.Millisecond, reserve: 3},
				{errKind: models.ErrTimeout, delay: 2 * time.Second},
				{errKind: models.ErrUnavailable},
				{errKind: models.ErrRefused},
				{errKind: models.ErrBadResponse},
				{errKind: models.ErrBadRequest},
			}},
		},
		{
			name: "multi-line text and a delay",
			src:  "turns:\n  - text: |\n      line one\n      line two\n    delay: 25ms\n",
			want: &Model{name: "script", turns: []turn{{text: "line one\nline two\n", finish: "stop", delay: 25 * time.Millisecond}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("s.yaml", []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // exact error text
	}{
		{"empty", "", "s.yaml: turns: the script is empty: it needs turns"},
		{"only a comment", "# nothing\n", "s.yaml: turns: the script is empty: it needs turns"},
		{"not a mapping", "- a\n", "s.yaml:1:1: a script is a mapping with model and turns"},
		{"two documents", "turns: [{}]\n---\nturns: [{}]\n", "s.yaml:3:1: a script is one YAML document"},
		{"syntax error", "turns: [\n", "s.yaml:1:8: sequence end token ']' not found"},
		{"duplicate key", "turns:\n  - text: a\n    text: b\n", `s.yaml:3:5: mapping key "text" already defined at [2:5]`},
		{"unknown top key", "bogus: 1\nturns: [{}]\n", "s.yaml:1:1: bogus: unknown key (known keys: model, turns)"},
		{"empty model", "model: ''\nturns: [{}]\n", "s.yaml:1:8: model: empty name (leave model out for the default)"},
		{"missing turns", "model: x\n", "s.yaml:1:1: turns: a script needs a list of turns (turns: [] for none)"},
		{"turns not a list", "turns: 3\n", "s.yaml:1:8: turns: a script needs a list of turns (turns: [] for none)"},
		{"empty turn entry", "turns:\n  -\n  - text: a\n", "s.yaml:2:3: turn 1: a turn is a mapping (write {} for an empty reply)"},
		{"scalar turn", "turns:\n  - text: a\n  - 5\n", "s.yaml:3:5: turn 2: a turn is a mapping (write {} for an empty reply)"},
		{"unknown turn key", "turns:\n  - text: hi\n    bogus: 1\n",
			"s.yaml:3:5: turn 1: bogus: unknown key (known keys: text, calls, usage, reserve, finish, error, retry_after, delay, branches)"},
		{"text not a string", "turns:\n  - text: [1, 2]\n", "s.yaml:2:11: turn 1: text: want a string, got a list"},
		{"reserve not an integer", "turns:\n  - reserve: abc\n", "s.yaml:2:14: turn 1: reserve: want an integer, got a string"},
		{"negative reserve", "turns:\n  - reserve: -1\n",
			"s.yaml:2:14: turn 1: reserve: -1 is out of range (want a non-negative integer below 2^64)"},
		{"cost outside usage", "turns:\n  - usage: {input_tokens: 1, output_tokens: 1}\n    cost: 3\n",
			"s.yaml:3:11: turn 1: cost: a cost goes inside usage (usage.cost): a cost without token counts would report unknown tokens as known"},
		{"usage half given", "turns:\n  - usage: {input_tokens: 1}\n",
			"s.yaml:2:12: turn 1: usage: give both input_tokens and output_tokens (leave usage out for unknown usage)"},
		{"usage unknown key", "turns:\n  - usage: {input_tokens: 1, output_tokens: 2, costs: 3}\n",
			"s.yaml:2:48: turn 1: costs: unknown key (known keys: input_tokens, output_tokens, cost)"},
		{"usage not a mapping", "turns:\n  - usage: 5\n", "s.yaml:2:12: turn 1: usage: want a mapping with input_tokens and output_tokens"},
		{"unknown error kind", "turns:\n  - error: boom\n",
			`s.yaml:2:12: turn 1: error: unknown error kind "boom" (want one of rate_limited, unavailable, timeout, refused, bad_response, bad_request)`},
		{"exhausted is not scriptable", "turns:\n  - error: exhausted\n",
			`s.yaml:2:12: turn 1: error: unknown error kind "exhausted"`},
		{"error turn with text", "turns:\n  - error: timeout\n    text: x\n",
			"s.yaml:3:11: turn 1: text: an error turn returns no reply: leave text out"},
		{"error turn with usage", "turns:\n  - error: refused\n    usage: {input_tokens: 1, output_tokens: 1}\n",
			"s.yaml:3:12: turn 1: usage: an error turn returns no reply: leave usage out"},
		{"retry_after without error", "turns:\n  - retry_after: 1s\n",
			"s.yaml:2:18: turn 1: retry_after: only an error turn has a retry_after"},
		{"unknown finish", "turns:\n  - finish: done\n",
			`s.yaml:2:13: turn 1: finish: unknown finish "done" (want one of stop, tool_calls, length, refusal)`},
		{"delay without unit", "turns:\n  - delay: 5\n", `s.yaml:2:12: turn 1: delay: want a duration such as 250ms or 2s, got "5"`},
		{"negative delay", "turns:\n  - delay: -1s\n", "s.yaml:2:12: turn 1: delay: negative duration -1s"},
		{"bad retry_after", "turns:\n  - error: rate_limited\n    retry_after: soon\n",
			`s.yaml:3:18: turn 1: retry_after: want a duration such as 250ms or 2s, got "soon"`},
		{"call without name", "turns:\n  - calls:\n      - args: {a: 1}\n", "s.yaml:3:9: turn 1, call 1: name: a call needs a name"},
		{"call with empty name", "turns:\n  - calls:\n      - name: ''\n", "s.yaml:3:15: turn 1, call 1: name: a call needs a name"},
		{"args and args_raw", "turns:\n  - calls:\n      - name: x\n        args: {a: 1}\n        args_raw: '{'\n",
			"s.yaml:4:15: turn 1, call 1: args: give args or args_raw, not both"},
		{"args not a mapping", "turns:\n  - calls:\n      - name: x\n        args: [1]\n",
			"s.yaml:4:15: turn 1, call 1: args: want a mapping (use args_raw for any other text)"},
		{"null args", "turns:\n  - calls:\n      - name: x\n        args:\n",
			"turn 1, call 1: args: want a mapping (use args_raw for any other text)"},
		{"args not JSON", "turns:\n  - calls:\n      - name: x\n        args: {n: .nan}\n",
			"s.yaml:4:15: turn 1, call 1: args: not representable as JSON"},
		{"explicit id clashes with a default", "turns:\n  - calls:\n      - {name: x, id: call-1-2}\n      - {name: y}\n",
			`turn 1, call 2: id: id "call-1-2" is already used by call 1 of this turn`},
		{"empty id", "turns:\n  - calls:\n      - {name: x, id: ''}\n", "turn 1, call 1: id: empty id (leave id out for the default)"},
		{"unknown call key", "turns:\n  - calls:\n      - name: x\n        argz: {}\n",
			"s.yaml:4:9: turn 1, call 1: argz: unknown key (known keys: id, name, args, args_raw)"},
		{"calls not a list", "turns:\n  - calls: {name: x}\n", "s.yaml:2:12: turn 1: calls: want a list of calls"},
		{"call not a mapping", "turns:\n  - calls:\n      - x\n", "s.yaml:3:9: turn 1, call 1: a call is a mapping with a name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("s.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded with %d turns, want error %q", m.Len(), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error\n got %q\nwant %q", err.Error(), tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.File != "s.yaml" {
				t.Errorf("ParseError.File = %q, want s.yaml", pe.File)
			}
		})
	}
}

func TestParseErrorFields(t *testing.T) {
	_, err := Parse("dir/x.yaml", []byte("turns:\n  - {}\n  - calls:\n      - name: a\n      - args_raw: x\n"))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *ParseError", err)
	}
	want := ParseError{File: "dir/x.yaml", Line: 5, Column: 9, Turn: 2, Call: 2, Field: "name", Msg: "a call needs a name"}
	if *pe != want {
		t.Errorf("ParseError = %+v, want %+v", *pe, want)
	}
}

func TestLoad(t *testing.T) {
	m, err := Load(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if m.Name() != "demo-agent" || m.Len() != 4 {
		t.Errorf("Load: name %q, %d turns; want demo-agent, 4", m.Name(), m.Len())
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("turns:\n  - finish: maybe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":2:13: turn 1: finish: ") {
		t.Errorf("Load(bad) = %v, want an error naming %s:2:13 and finish", err, bad)
	}

	missing := filepath.Join(dir, "missing.yaml")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want a not-exist error naming the path", err)
	}
}

// A script may say on purpose that a model sent one call id twice, and may
// have nothing to say at all; both are cases the runner must handle.
func TestParseAllowsDeliberateOddities(t *testing.T) {
	m, err := Parse("s.yaml", []byte("turns:\n  - calls:\n      - {name: x, id: a}\n      - {name: y, id: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Complete(context.Background(), models.Request{Turn: 1})
	if err != nil || len(r.Calls) != 2 || r.Calls[0].ID != "a" || r.Calls[1].ID != "a" {
		t.Fatalf("duplicate ids: %+v, %v", r, err)
	}
	empty, err := Parse("s.yaml", []byte("turns: []\n"))
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty script: %v", err)
	}
	if _, err := empty.Complete(context.Background(), models.Request{Turn: 1}); models.KindOf(err) != models.ErrExhausted {
		t.Fatalf("empty script answers turn 1: %v", err)
	}
}
