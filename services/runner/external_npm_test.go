package runner_test

import (
	"os"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
)

// npmAgent is a coding agent nobody on this project wrote, installed from
// npm by examples/external-agent/install.sh (scripts/test-deps runs it),
// as the example's treatment runs it.
type npmAgent struct {
	name, bin, wire string
	args            []string
	env             map[string]string
	// tool is the agent's own tool the script calls, with its arguments.
	tool, args1 string
}

var npmAgents = []npmAgent{
	{name: "codex", bin: "/usr/local/lib/factline-agents/codex-0.169.0/node_modules/.bin/codex", wire: cases.WireOpenAIResponses,
		args: []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--model", "scripted",
			"-c", "model_provider=factline",
			"-c", `model_providers.factline={name="factline",base_url="{{.BaseURL}}",env_key="OPENAI_API_KEY",wire_api="responses"}`,
			"-c", "web_search=disabled", "-c", "features.multi_agent=false", "-c", "features.goals=false",
			"-c", "analytics.enabled=false", "-c", "check_for_update_on_startup=false", "{{.Instruction}}"},
		tool: "exec_command", args1: `{cmd: "printf '4\\n' > answer.txt && ./check.sh"}`},
	{name: "claude", bin: "/usr/local/lib/factline-agents/claude-2.1.328/node_modules/.bin/claude", wire: cases.WireAnthropicMessages,
		args: []string{"-p", "--dangerously-skip-permissions", "{{.Instruction}}"},
		env: map[string]string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
			"DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"},
		tool: "Bash", args1: `{command: "printf '4\\n' > answer.txt && ./check.sh", description: fix}`},
}

func (g npmAgent) treatment(t *testing.T) *cases.Treatment {
	t.Helper()
	if _, err := os.Stat(g.bin); err != nil {
		t.Fatalf("%s is not installed (%v): examples/external-agent/install.sh %s installs it (scripts/test-deps runs it)", g.name, err, g.name)
	}
	script := "turns:\n  - calls:\n      - {name: " + g.tool + ", args: " + g.args1 + "}\n    usage: {input_tokens: 9000, output_tokens: 30}\n" +
		"  - text: answer.txt holds 4 and ./check.sh passes.\n    usage: {input_tokens: 9100, output_tokens: 15}\n"
	tr := agentTreatment(t, script, append([]string{g.bin}, g.args...)...)
	tr.ID, tr.Agent.Wire, tr.Agent.Env = g.name, g.wire, g.env
	return tr
}

// Each npm agent on its own wire fixes the case through the proxy: its two
// calls are recorded turns whose stored requests are the agent's own (its
// tool offered by name, the tool's output sent back), the run ends done
// and the candidate is the workspace its tool changed.
func TestNpmAgentsFixTheCaseThroughTheirWire(t *testing.T) {
	t.Parallel()
	for _, g := range npmAgents {
		t.Run(g.name, func(t *testing.T) {
			e, _ := startWith(t)
			c := fixtureCase(t, "{steps: 10, wall: 2m}")
			log, end := e.runAgent(c, g.treatment(t), "npm-"+g.name)
			if end.Status != events.RunDone {
				t.Fatalf("ended %s (%s), want done", end.Status, end.Reason)
			}
			var started []events.TurnStarted
			var sealed *events.CandidateSealed
			for _, f := range log.Facts() {
				switch b := f.Body.(type) {
				case events.TurnStarted:
					started = append(started, b)
				case events.CandidateSealed:
					sealed = &b
				}
			}
			if len(started) != 2 {
				t.Fatalf("%d turns, want 2", len(started))
			}
			body, err := e.b.Blobs().Get(e.ctx, started[1].ContextDigest)
			must(t, err)
			for _, want := range []string{`"` + g.tool + `"`, "Make ./check.sh pass"} {
				if !strings.Contains(string(body), want) {
					t.Errorf("turn 2's stored request lacks %s", want)
				}
			}
			if sealed == nil || sealed.SnapshotDigest == c.FixtureDigest {
				t.Fatalf("the candidate %+v is not the workspace the agent changed", sealed)
			}
		})
	}
}

// A budget of one step stops each npm agent: its second call is refused,
// starts no turn, and the run ends exhausted.
func TestNpmAgentsPastBudgetAreExhausted(t *testing.T) {
	t.Parallel()
	for _, g := range npmAgents {
		t.Run(g.name, func(t *testing.T) {
			e, _ := startWith(t)
			c := fixtureCase(t, "{steps: 1, wall: 2m}")
			log, end := e.runAgent(c, g.treatment(t), "npm-budget-"+g.name)
			if end.Status != events.RunExhausted || end.Reason != "step_limit" {
				t.Fatalf("ended %s (%s), want exhausted step_limit", end.Status, end.Reason)
			}
			n := 0
			for _, f := range log.Facts() {
				if _, ok := f.Body.(events.TurnStarted); ok {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d turns started, want 1", n)
			}
		})
	}
}
