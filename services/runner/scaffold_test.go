package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
)

// scaffoldScript calls a tool the scaffold does not offer (edit_file),
// then fixes the answer with the tools it does and proposes done.
const scaffoldScript = `turns:
  - calls:
      - {id: e, name: edit_file, args: {path: answer.txt, old: "3", new: "4"}}
      - {id: w, name: write_file, args: {path: answer.txt, content: "4\n"}}
      - {id: c, name: run_command, args: {command: ./check.sh}}
    usage: {input_tokens: 100, output_tokens: 10, cost: 2}
    reserve: 3
  - calls:
      - {id: done, name: task_complete, args: {status: done, evidence: [t1/c]}}
    usage: {input_tokens: 120, output_tokens: 12, cost: 2}
    reserve: 3
`

// scaffoldPrompt is a template over the case's fields.
const scaffoldPrompt = "Case {{.id}} ({{.budget.steps}} steps). Tools: {{range $i, $t := .tools}}{{if $i}}, {{end}}{{$t}}{{end}}.\n" +
	"Checks:{{range .checks}} {{.id}}={{.command}}{{end}}\n"

// scaffoldTreatment writes a treatment file whose scaffold sets a
// templated prompt file, narrows the tools and describes run_command, and
// loads it as a suite would.
func scaffoldTreatment(t *testing.T, script string) (*cases.Treatment, string) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "scripts", "fix.yaml"), []byte(script), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "prompt.tmpl"), []byte(scaffoldPrompt), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(`id: scaffolded
model: {provider: scripted, scripts: scripts}
scaffold:
  prompt_file: prompt.tmpl
  template: true
  tools: [task_complete, run_command, write_file, read_file]
  tool_descriptions:
    run_command: "Run ONE shell command in the workspace; say why first."
`), 0o644))
	tr, err := cases.LoadTreatment(filepath.Join(dir, "t.yaml"))
	must(t, err)
	return tr, filepath.Join(dir, "prompt.tmpl")
}

// sentRequest is the parts of a stored scripted request the scaffold
// shapes.
type sentRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
}

// firstRequest reads the request blob of a run's first turn: what the
// model was sent.
func firstRequest(t *testing.T, ctx context.Context, b *bus.Bus, log bus.RunLog) sentRequest {
	t.Helper()
	for _, f := range log.Facts() {
		if ts, ok := f.Body.(events.TurnStarted); ok {
			body, err := b.Blobs().Get(ctx, ts.ContextDigest)
			must(t, err)
			if events.DigestOf(body) != ts.ContextDigest {
				t.Fatalf("the request blob is not the committed request")
			}
			var req sentRequest
			must(t, json.Unmarshal(body, &req))
			return req
		}
	}
	t.Fatal("no turn started")
	return sentRequest{}
}

// A treatment's scaffold reaches the model request exactly: the system
// message is its template rendered over the case, only the tools it
// chose are offered (in the built-in order), with its description of
// run_command; a call of a tool it did not offer is refused as not allowed,
// and the run still finishes with the tools it has.
func TestAScaffoldShapesTheRequestSent(t *testing.T) {
	t.Parallel()
	e := start(t)
	kase := fixtureCase(t, "{steps: 6}")
	tr, _ := scaffoldTreatment(t, scaffoldScript)
	p, err := fleettest.Publish(e.ctx, e.b, kase, tr)
	must(t, err)
	must(t, fleettest.Request(e.ctx, e.b, "suite", "scaffolded", p, 1))
	log, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", "scaffolded")
	must(t, err)
	if end.Status != events.RunDone {
		t.Fatalf("ended %s/%q", end.Status, end.Reason)
	}
	req := firstRequest(t, e.ctx, e.b, log)
	wantPrompt := "Case fix (6 steps). Tools: read_file, write_file, run_command, task_complete.\nChecks: tests=./check.sh\n"
	if len(req.Messages) < 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != wantPrompt {
		t.Fatalf("the system message %+v, want %q", req.Messages[:1], wantPrompt)
	}
	var names []string
	for _, tool := range req.Tools {
		names = append(names, tool.Name)
		if tool.Name == "run_command" && tool.Description != "Run ONE shell command in the workspace; say why first." {
			t.Errorf("run_command is described %q", tool.Description)
		}
		if tool.Name == "read_file" && (tool.Description == "" || strings.Contains(tool.Description, "ONE")) {
			t.Errorf("read_file lost its built-in description: %q", tool.Description)
		}
	}
	if got := strings.Join(names, ","); got != "read_file,write_file,run_command,task_complete" {
		t.Fatalf("tools offered %s", got)
	}
	d := dispatches(log)
	if r := d["t1/e"]; r.Error == nil || r.Error.Code != "TOOL_NOT_ALLOWED" || r.Dispatch.Disposition != events.DispositionRejected ||
		!strings.Contains(r.Output, `tool \"edit_file\" is not allowed in this task`) {
		t.Fatalf("the call of a tool not offered: %+v", r)
	}
	// The runner's claim names what it ran: the prompt and the
	// description are in its harness component, so it is not the
	// identity a default treatment's runner claims.
	e2 := start(t)
	plain := treatment(t, scaffoldScript)
	p2, err := fleettest.Publish(e2.ctx, e2.b, fixtureCase(t, "{steps: 6}"), plain)
	must(t, err)
	must(t, fleettest.Request(e2.ctx, e2.b, "suite", "plain", p2, 1))
	log2, _, err := fleettest.WaitEnded(e2.ctx, e2.b, "suite", "plain")
	must(t, err)
	if claimed(t, log) == claimed(t, log2) {
		t.Fatal("a scaffolded runner claimed the identity of a default one")
	}
	if req2 := firstRequest(t, e2.ctx, e2.b, log2); req2.Messages[0].Content != cases.DefaultSystemPrompt || len(req2.Tools) != 6 {
		t.Fatalf("the default treatment's request: %q, %d tools", req2.Messages[0].Content, len(req2.Tools))
	}
}

func claimed(t *testing.T, log bus.RunLog) events.Digest {
	t.Helper()
	for _, f := range log.Facts() {
		if c, ok := f.Body.(events.RunClaimed); ok {
			return c.Identity
		}
	}
	t.Fatal("no claim")
	return ""
}

// A runner that takes a scaffolded run over sends what the dead runner
// rendered, byte for byte, though the prompt file was changed in between:
// the prompt travels in the stored treatment, and the file is never read
// again. Kill the runner process after each of its first commits in turn.
func TestATakeoverSendsTheScaffoldTheDeadRunnerRendered(t *testing.T) {
	t.Parallel()
	b, srv := bustest.StartWith(t, bus.EmbeddedConfig{Listen: "127.0.0.1:-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	go func() { _ = fleettest.Decider{Bus: b}.Run(ctx) }()
	tr, promptFile := scaffoldTreatment(t, twoTurnScript)
	p, err := fleettest.Publish(ctx, b, fixtureCase(t, "{steps: 6, cost: 12}"), tr)
	must(t, err)
	ref := takeover(t, ctx, b, "ref", p, nil)
	want := outcomeOf(t, ref.log, ref.end)
	if want.status != events.RunDone || len(want.requests) != 2 {
		t.Fatalf("reference run: %+v", want)
	}
	must(t, os.WriteFile(promptFile, []byte("Another prompt for {{.id}}\n"), 0o644))
	for crashAt := 1; crashAt <= 4; crashAt++ {
		t.Run(fmt.Sprintf("after commit %d", crashAt), func(t *testing.T) {
			run := fmt.Sprintf("crash%d", crashAt)
			child := exec.Command(os.Args[0])
			child.Env = append(os.Environ(), "FACTLINE_TEST_RUNNER="+srv.ClientURL(),
				"FACTLINE_TEST_CRASH_AT="+strconv.Itoa(crashAt), "FACTLINE_TEST_WORKDIR="+t.TempDir())
			must(t, child.Start())
			res := takeover(t, ctx, b, run, p, child)
			got := outcomeOf(t, res.log, res.end)
			if got.status != want.status || fmt.Sprint(got.requests) != fmt.Sprint(want.requests) || got.snapshot != want.snapshot {
				t.Fatalf("after a crash at commit %d:\n got %+v\nwant %+v", crashAt, got, want)
			}
			if req := firstRequest(t, ctx, b, res.log); !strings.HasPrefix(req.Messages[0].Content, "Case fix (6 steps).") {
				t.Fatalf("the system message %q", req.Messages[0].Content)
			}
		})
	}
}
