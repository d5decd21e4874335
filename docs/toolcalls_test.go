package docs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/factline/factline/models"
	"github.com/factline/factline/models/scripted"
	"github.com/factline/factline/services/runner/tools"
)

// toolCall is one example tool call of the docs. Malformed is true for a
// call whose arguments are given raw (a script's args_raw): such a call is
// there to show a rejection.
type toolCall struct {
	where     string
	name      string
	args      string
	malformed bool
}

// scriptCalls reads a scripted model's script and returns every call it
// makes, each turn's and each of its branches', with the arguments exactly
// as the model sends them (the scripted model's own conversion).
func scriptCalls(t *testing.T, where string, data []byte) []toolCall {
	t.Helper()
	m, err := scripted.Parse(where, data)
	if err != nil {
		t.Errorf("%s: the script does not parse: %v", where, err)
		return nil
	}
	// Which calls give their arguments raw, and each branch's text.
	type rawCall struct {
		ArgsRaw *string `yaml:"args_raw"`
	}
	var raw struct {
		Turns []struct {
			Calls    []rawCall `yaml:"calls"`
			Branches []struct {
				RequestContains string    `yaml:"request_contains"`
				Calls           []rawCall `yaml:"calls"`
			} `yaml:"branches"`
		} `yaml:"turns"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	var out []toolCall
	// reply asks the model for turn's reply to a request holding text
	// ("" for the turn's own reply, a branch's text for the branch's).
	reply := func(turn int, text, at string, rawCalls []rawCall) {
		req := models.Request{Turn: turn}
		if text != "" {
			req.Messages = []models.Message{{Role: "user", Content: text}}
		}
		r, err := m.Complete(context.Background(), req)
		var me *models.Error
		if errors.As(err, &me) {
			return // a scripted provider error: no calls
		} else if err != nil {
			t.Fatalf("%s: %s: %v", where, at, err)
		}
		if len(r.Calls) != len(rawCalls) {
			t.Fatalf("%s: %s answers %d calls, the file lists %d", where, at, len(r.Calls), len(rawCalls))
		}
		for i, c := range r.Calls {
			out = append(out, toolCall{
				where:     where + ": " + at + ", call " + strconv.Itoa(i+1),
				name:      c.Name,
				args:      c.Args,
				malformed: rawCalls[i].ArgsRaw != nil,
			})
		}
	}
	for turn := 1; turn <= m.Len(); turn++ {
		at := "turn " + strconv.Itoa(turn)
		reply(turn, "", at, raw.Turns[turn-1].Calls)
		for b, br := range raw.Turns[turn-1].Branches {
			reply(turn, br.RequestContains, at+", branch "+strconv.Itoa(b+1), br.Calls)
		}
	}
	return out
}

// pageCalls returns the example tool calls of a markdown page: every
// scripted model's script shown in it (a yaml block with turns:) and
// every `tool-calls` block, one {"name": …, "arguments": {…}} a line.
func pageCalls(t *testing.T, page string) []toolCall {
	t.Helper()
	var out []toolCall
	for _, f := range fences(t, page) {
		switch {
		case f.has("tool-calls"):
			for i, line := range strings.Split(strings.TrimSpace(f.body), "\n") {
				var c struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				}
				where := f.where() + ": line " + strconv.Itoa(i+1)
				dec := json.NewDecoder(strings.NewReader(line))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&c); err != nil || c.Name == "" {
					t.Errorf("%s: not a tool call {\"name\": …, \"arguments\": {…}}: %v", where, err)
					continue
				}
				out = append(out, toolCall{where: where, name: c.Name, args: string(c.Arguments)})
			}
		case f.lang == "yaml" && strings.Contains("\n"+f.body, "\nturns:"):
			out = append(out, scriptCalls(t, f.where(), []byte(f.body))...)
		}
	}
	return out
}

// Every example tool call in the docs is one the runner accepts: checked
// against the built-in tools' own contracts, by the registry's own
// validator (what turns a bad call into BAD_ARGUMENTS), in the pages
// (scripted-model.md, tools.md, first-suite.md, the examples' READMEs)
// and in the examples' scripts. A call given raw (args_raw) is there to
// be rejected, and must be.
func TestDocExampleToolCallsMatchTheSchemas(t *testing.T) {
	reg, err := tools.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob("../examples/*/README.md")
	pages = append([]string{"scripted-model.md", "tools.md", "first-suite.md"}, pages...)
	perPage := map[string]int{}
	var calls []toolCall
	for _, p := range pages {
		c := pageCalls(t, p)
		perPage[p] = len(c)
		calls = append(calls, c...)
	}
	scripts, _ := filepath.Glob("../examples/*/scripts/*.yaml")
	for _, s := range scripts {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, scriptCalls(t, s, data)...)
	}
	// The pages that teach tool calls show some: a checker that finds none
	// would pass whatever they say.
	if perPage["scripted-model.md"] < 3 || perPage["first-suite.md"] < 5 || perPage["tools.md"] < len(tools.Builtin()) {
		t.Fatalf("example calls found per page: %v; want scripted-model.md's, first-suite.md's and one a built-in tool in tools.md", perPage)
	}
	seen := map[string]bool{}
	for _, c := range calls {
		_, _, bad := reg.Check(c.name, c.args)
		switch {
		case c.malformed && bad == nil:
			t.Errorf("%s: %s %s is given raw to show a rejection, yet the runner accepts it", c.where, c.name, c.args)
		case !c.malformed && bad != nil:
			t.Errorf("%s: %s %s: the runner rejects it: %s %s", c.where, c.name, c.args, bad.Err.Code, bad.Err.Message)
		}
		if !c.malformed && bad == nil {
			seen[c.name] = true
		}
	}
	for _, tool := range tools.Builtin() {
		if name := tool.Contract().Name; !seen[name] {
			t.Errorf("no valid example call of %s anywhere in the docs", name)
		}
	}
}

// docs/scripted-model.md's example is the script models/scripted's tests
// load, apart from the comment that says which is which: the page shows
// what the tests check.
func TestScriptedModelExampleIsTheTestedOne(t *testing.T) {
	tested, err := os.ReadFile("../models/scripted/testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dropFirst := func(s string) string {
		_, rest, _ := strings.Cut(s, "\n")
		return rest
	}
	for _, f := range fences(t, "scripted-model.md") {
		if f.lang == "yaml" && strings.Contains(f.body, "\nturns:") {
			if dropFirst(f.body) != dropFirst(string(tested)) {
				t.Fatalf("%s: the example differs from models/scripted/testdata/example.yaml:\n%s", f.where(), f.body)
			}
			return
		}
	}
	t.Fatal("scripted-model.md shows no example script")
}

// A call in a turn's branch (what the scripted model answers when the
// request holds the branch's text) is an example call too: the checker
// reads it, so a bad one there is found.
func TestScriptCallsIncludeTheBranches(t *testing.T) {
	script := []byte(`turns:
  - calls:
      - {id: ls, name: list_files, args: {path: .}}
    branches:
      - request_contains: "did not change"
        calls:
          - {id: ls, name: list_files, args: {dir: .}}
          - {id: raw, name: read_file, args_raw: '{"path": 1}'}
`)
	reg, err := tools.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := scriptCalls(t, "branch.yaml", script)
	if len(calls) != 3 {
		t.Fatalf("found %d calls, want the turn's one and its branch's two: %+v", len(calls), calls)
	}
	branch := calls[1]
	if _, _, bad := reg.Check(branch.name, branch.args); bad == nil || branch.malformed || !strings.Contains(branch.where, "branch 1") {
		t.Errorf("the branch's list_files {dir} is not found as a call the runner rejects: %+v", branch)
	}
	if !calls[2].malformed {
		t.Errorf("the branch's args_raw call is not marked raw: %+v", calls[2])
	}
}
