package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// wireRecorder is an OpenAI-compatible Chat Completions server on loopback
// that keeps every request body it is sent and answers as fakeOpenAI
// does: a write_file call that makes answer.txt hold 4, then "done".
type wireRecorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newWireRecorder(t *testing.T) *wireRecorder {
	t.Helper()
	w := &wireRecorder{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(rw, "not found", http.StatusNotFound)
			return
		}
		w.mu.Lock()
		w.bodies = append(w.bodies, body)
		w.mu.Unlock()
		var req wireRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		msg := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"answer.txt\",\"content\":\"4\\n\"}"}}]}`
		finish := "tool_calls"
		if slices.ContainsFunc(req.Messages, func(m wireMessage) bool { return m.Role == "tool" }) {
			msg, finish = `{"role":"assistant","content":"done: answer.txt holds 4"}`, "stop"
		}
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`,
			req.Model, msg, finish)
	}))
	t.Cleanup(w.srv.Close)
	if !strings.HasPrefix(w.srv.URL, "http://127.0.0.1:") {
		t.Fatalf("the fake model is not on loopback: %s", w.srv.URL)
	}
	return w
}

type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"function"`
	} `json:"tools"`
}

// A suite of one case under three treatments on a real OpenAI-compatible
// wire: the default, one whose scaffold sets a templated prompt, and one
// whose scaffold narrows the tools and describes one. Each request on the
// wire is the request blob its turn.started committed, byte for byte; the
// default's system message is today's preamble, the prompt treatment's
// is its template rendered over the case, and the tools treatment offers
// only its tools, with its description. The report names what differs:
// the prompt alone (an ablation), and the tools and their descriptions.
func TestAScaffoldIsATreatmentOnTheWire(t *testing.T) {
	t.Parallel()
	fake := newWireRecorder(t)
	dir := t.TempDir()
	model := fmt.Sprintf("model: {provider: openai, name: m, base_url: %q, input_price: 1000000, output_price: 1000000}\n", fake.srv.URL+"/v1")
	files := map[string]string{
		"a.yaml": "id: a\ninstruction: Make answer.txt hold 4.\nbudget: {steps: 4}\n" +
			"grading:\n  instruments: [{id: tests, kind: command, command: 'grep -qx 4 answer.txt'}]\n",
		"base.yaml":        "id: base\n" + model,
		"prompt.yaml":      "id: prompt\n" + model + "scaffold: {prompt_file: prompts/terse.md, template: true}\n",
		"tools.yaml":       "id: tools\n" + model + "scaffold:\n  tools: [write_file, task_complete]\n  tool_descriptions: {write_file: Replace a whole file.}\n",
		"prompts/terse.md": "Case {{.id}}, at most {{.budget.steps}} turns. Tools: {{range .tools}}{{.}} {{end}}\n",
		"scaffold.yaml":    "name: scaffold\ncases: [{path: a.yaml}]\ntreatments: [{path: base.yaml}, {path: prompt.yaml}, {path: tools.yaml}]\ntrials: 1\n",
	}
	for file, content := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
	}
	store := t.TempDir()
	code, out, errOut := runCLI(t, "run", filepath.Join(dir, "scaffold.yaml"), "--store", store, "--json", "--fsync", "interval")
	var r measure.Report
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, a := range r.Attempts {
		if a.Outcome != measure.OutcomePassed {
			t.Fatalf("attempt %+v did not pass", a)
		}
	}

	// What the wire carried is what the log committed.
	code, tail, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", "turn.started", "--json")
	if code != 0 {
		t.Fatalf("tail: %d %s", code, errOut)
	}
	committed := map[events.Digest]bool{}
	for _, m := range regexp.MustCompile(`"context_digest":"(sha256:[0-9a-f]{64})"`).FindAllStringSubmatch(tail, -1) {
		committed[events.Digest(m[1])] = true
	}
	fake.mu.Lock()
	bodies := slices.Clone(fake.bodies)
	fake.mu.Unlock()
	if len(bodies) != 6 || len(committed) != 6 {
		t.Fatalf("%d requests on the wire, %d committed; want 6 of each", len(bodies), len(committed))
	}
	systems := map[string]bool{}
	var toolSets []string
	for _, body := range bodies {
		if !committed[events.DigestOf(body)] {
			t.Fatalf("a request on the wire is no committed request blob: %s", body)
		}
		var req wireRequest
		must(t, json.Unmarshal(body, &req))
		systems[req.Messages[0].Content] = true
		var names []string
		for _, tool := range req.Tools {
			names = append(names, tool.Function.Name+"="+strings.SplitN(tool.Function.Description, ".", 2)[0])
		}
		toolSets = append(toolSets, strings.Join(names, ","))
	}
	terse := "Case a, at most 4 turns. Tools: read_file list_files write_file edit_file run_command task_complete \n"
	if len(systems) != 2 || !systems[terse] || !systems[defaultPreamble] {
		t.Fatalf("system messages on the wire: %q", slices.Collect(maps.Keys(systems)))
	}
	narrowed := 0
	for _, set := range toolSets {
		if strings.HasPrefix(set, "write_file=Replace a whole file,task_complete=") {
			narrowed++
		} else if strings.Count(set, "=") != 6 || strings.Contains(set, "Replace a whole file") {
			t.Fatalf("a request offered %s", set)
		}
	}
	if narrowed != 2 {
		t.Fatalf("%d requests offered the narrowed tools, want 2: %v", narrowed, toolSets)
	}

	got := map[string]measure.Comparison{}
	for _, c := range r.Comparisons {
		got[c.A+"/"+c.B] = c
	}
	for pair, want := range map[string]struct {
		label string
		diff  []string
	}{
		"base/prompt":  {measure.LabelAblation, []string{"prompt"}},
		"base/tools":   {measure.LabelBundled, []string{"capabilities", "tool_descriptions"}},
		"prompt/tools": {measure.LabelBundled, []string{"capabilities", "prompt", "tool_descriptions"}},
	} {
		c, ok := got[pair]
		if !ok || c.Label != want.label || !slices.Equal(c.Differences, want.diff) {
			t.Errorf("%s: %q differing in %v, want %q differing in %v", pair, c.Label, c.Differences, want.label, want.diff)
		}
	}
}

// defaultPreamble is today's system prompt as it stood before a treatment
// could set one, written out here so that a change to the default fails
// this test.
const defaultPreamble = "You are an agent working in a workspace directory through tools. " +
	"Tool results are JSON: {\"ok\":true,...} or {\"ok\":false,\"error\":{...}}. " +
	"Each tool call has an evidence ref \"t<turn>/<call-id>\" shown with its result. " +
	"When the task is done, call task_complete with status \"done\" and cite the evidence refs that show it " +
	"(for example a passing check); if you cannot finish, call task_complete with status \"blocked\", a reason " +
	"and the unmet requirement ids. The harness checks every claim."

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
