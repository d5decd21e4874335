package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/runner"
)

// harness is one embedded JetStream server with the runner, the stall handler
// and the stop decider running on it, connected only through the bus.
type harness struct {
	t   *testing.T
	b   *bus.Bus
	ctx context.Context
}

func startFleet(t *testing.T) *harness {
	t.Helper()
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	runFleet(t, ctx, b, fleet.Options{Services: loopServices, Per: map[string][]kit.Option{
		fleet.Runner: {runner.WithWorkDir(t.TempDir()), kit.WithWorkers(4), runner.WithDecisionTimeout(time.Minute)},
	}})
	return &harness{t: t, b: b, ctx: ctx}
}

// loopServices are the services a run's loop needs: the runner, the stall
// handler and the stop decider.
var loopServices = []string{fleet.Runner, fleet.Staller, fleet.Decider}

// runFleet runs the fleet o describes on b until the test ends (or ctx
// does).
func runFleet(t *testing.T, ctx context.Context, b *bus.Bus, o fleet.Options) {
	t.Helper()
	f, err := fleet.Start(ctx, b, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
}

// task describes a case for a test: its fixture files and case YAML body
// (without id, instruction and fixture, which the helper adds).
type task struct {
	files map[string]string // path → content; paths ending in .sh are executable
	yaml  string
}

// checkTask is a case whose check passes when answer.txt holds 4, and
// prints a diagnostic naming the wrong answer otherwise.
func checkTask(budget string) task {
	return task{
		files: map[string]string{
			"answer.txt": "3\n",
			"check.sh":   "#!/bin/bash\ngrep -qx 4 answer.txt || { echo \"answer.txt:1: want 4, got $(cat answer.txt)\"; exit 1; }\n",
		},
		yaml: "budget: " + budget + `
checks:
  - id: tests
    command: ./check.sh
    diagnostics:
      pattern: '^(?P<file>[^:]+):(?P<line>\d+): (?P<message>.*)$'
      complete: true
`,
	}
}

func (f *harness) caseOf(tk task) *cases.Case {
	t := f.t
	t.Helper()
	dir := t.TempDir()
	fx := filepath.Join(dir, "fixture")
	if err := os.MkdirAll(fx, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range tk.files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(fx, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	body := "id: task\ninstruction: Do the task, then call task_complete citing your evidence.\nfixture: fixture\n" + tk.yaml
	path := filepath.Join(dir, "case.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := cases.LoadCase(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run publishes a task with a script, runs it and returns its log and end.
func (f *harness) run(name string, tk task, script string) (bus.RunLog, events.RunEnded) {
	t := f.t
	t.Helper()
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: scripted\nmodel: {provider: scripted, scripts: x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr.Model.ScriptFiles = map[string]string{"task": script}
	p, err := fleettest.Publish(f.ctx, f.b, f.caseOf(tk), tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleettest.Request(f.ctx, f.b, "it", name, p, 1); err != nil {
		t.Fatal(err)
	}
	log, end, err := fleettest.WaitEnded(f.ctx, f.b, "it", name)
	if err != nil {
		t.Fatal(err)
	}
	return log, end
}

// turn renders one scripted turn of calls (each "name {json-ish args}" is
// given as YAML flow), with a usage of cost 2 reserved at 3.
func turn(calls ...string) string {
	var b strings.Builder
	b.WriteString("  - calls:\n")
	for _, c := range calls {
		b.WriteString("      - " + c + "\n")
	}
	b.WriteString("    usage: {input_tokens: 100, output_tokens: 10, cost: 2}\n    reserve: 3\n")
	return b.String()
}

func write(id, answer string) string {
	return fmt.Sprintf(`{id: %s, name: write_file, args: {path: answer.txt, content: "%s\n"}}`, id, answer)
}

func check(id string) string {
	return fmt.Sprintf(`{id: %s, name: run_command, args: {command: ./check.sh}}`, id)
}

func done(evidence ...string) string {
	return fmt.Sprintf(`{id: done, name: task_complete, args: {status: done, evidence: [%s]}}`, strings.Join(evidence, ", "))
}

func script(turns ...string) string { return "turns:\n" + strings.Join(turns, "") }

// invariants every run must keep, whatever its outcome.
func invariants(t *testing.T, log bus.RunLog) {
	t.Helper()
	completed, stalls, decisions := map[uint32]int{}, map[uint32]int{}, map[uint32]int{}
	for i, r := range log.Records {
		if r.Fact.Position != uint64(i+1) {
			t.Fatalf("positions not contiguous at %d", i)
		}
		switch b := r.Fact.Body.(type) {
		case events.TurnCompleted:
			completed[b.Evidence.Turn]++
		case events.StallObserved:
			stalls[b.Turn]++
		case events.StopDecided:
			decisions[b.Decision.Turn]++
		}
	}
	for turn, n := range completed {
		if n != 1 || stalls[turn] != 1 || decisions[turn] != 1 {
			t.Fatalf("turn %d: %d completions, %d stall observations, %d decisions; want one each", turn, n, stalls[turn], decisions[turn])
		}
	}
	if len(decisions) != len(completed) {
		t.Fatalf("%d decisions for %d completed turns", len(decisions), len(completed))
	}
}

func dispatchesOf(log bus.RunLog) map[string]events.CompletedDispatch {
	out := map[string]events.CompletedDispatch{}
	for _, f := range log.Facts() {
		if d, ok := f.Body.(events.DispatchCompleted); ok {
			out[string(d.Dispatch.EvidenceRef)] = d.Dispatch
		}
	}
	return out
}

func decisionsOf(log bus.RunLog) []events.StopDecision {
	var out []events.StopDecision
	for _, f := range log.Facts() {
		if d, ok := f.Body.(events.StopDecided); ok {
			out = append(out, d.Decision)
		}
	}
	return out
}

func stallsOf(log bus.RunLog) []events.StallObserved {
	var out []events.StallObserved
	for _, f := range log.Facts() {
		if s, ok := f.Body.(events.StallObserved); ok {
			out = append(out, s)
		}
	}
	return out
}
