package runner_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/internal/testutil"
	"github.com/factline/factline/sandbox/sandboxtest"
	"github.com/factline/factline/services/runner"
)

// containerAgent is where the static test agent is in its image.
const containerAgent = "/usr/local/bin/miniagent"

// miniagentImage is the busybox test image with miniagent, built
// statically, at containerAgent.
func miniagentImage(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "miniagent")
	cmd := testutil.GoBuild(bin, "./agentproxy/miniagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build miniagent: %v\n%s", err, out)
	}
	return sandboxtest.ImageWith(t, "miniagent", map[string]string{containerAgent: bin})
}

// ctrAgentCase is the fixture case in an environment of image, without
// network (the default) unless network says otherwise.
func ctrAgentCase(t *testing.T, image, budget, network string) *cases.Case {
	t.Helper()
	c := fixtureCase(t, budget)
	c.Environment = &cases.Environment{Image: image, Workdir: "/src", Network: network, MemoryBytes: 256 << 20, Pids: 64}
	return c
}

// processWith reports whether a process on the host has marker in its
// command line (a container's processes are the host's too).
func processWith(marker string) bool {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(marker)) {
			return true
		}
	}
	return false
}

// An external agent with an environment runs in the attempt's container:
// its tool reads a file only the image has, in the environment's workdir,
// and writes the workspace the candidate is sealed from; it reaches its
// endpoint inside the container (which has no network), each call a
// recorded turn. run.claimed names the image by digest and says what the
// agent's network reaches; its version command ran in the image; no
// container of the run is left.
func TestExternalAgentInAContainerRunsInTheImage(t *testing.T) {
	image := miniagentImage(t)
	e, logs := startWith(t)
	script := `turns:
  - calls:
      - {name: read_file, args: {path: ` + sandboxtest.ImageMarker + `}}
      - {name: write_file, args: {path: answer.txt, content: "4\n"}}
    usage: {input_tokens: 100, output_tokens: 10}
  - text: answer.txt holds 4.
    usage: {input_tokens: 140, output_tokens: 9}
`
	tr := agentTreatment(t, script, containerAgent, "--stream", "{{.Instruction}} (in {{.Workspace}})")
	tr.Agent.Version = nil // the default: miniagent --version, in the image
	c := ctrAgentCase(t, image, "{steps: 10, wall: 2m}", "")
	log, end := e.runAgent(c, tr, "ctr-agent")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done", end.Status, end.Reason)
	}
	started := kinds(log, events.KindTurnStarted)
	if len(started) != 2 {
		t.Fatalf("%d turns, want 2", len(started))
	}
	body, err := e.b.Blobs().Get(e.ctx, started[1].Body.(events.TurnStarted).ContextDigest)
	must(t, err)
	for _, want := range []string{"miniagent", "wrote answer.txt", "(in /src)"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("turn 2's stored request lacks %q: the agent did not run in the image's /src: %s", want, body)
		}
	}
	var sealed *events.CandidateSealed
	for _, f := range log.Facts() {
		if b, ok := f.Body.(events.CandidateSealed); ok {
			sealed = &b
		}
	}
	if sealed == nil || sealed.SnapshotDigest == c.FixtureDigest {
		t.Fatalf("the candidate %+v is not the workspace the agent changed", sealed)
	}
	rec := e.claimedContainment(kinds(log, events.KindRunClaimed)[0])
	if rec == nil || rec.Provider != "container" || rec.Image == nil || rec.Image.Digest == "" {
		t.Fatalf("run.claimed containment %+v, want the container and its image's digest", rec)
	}
	if f, _ := rec.Feature(runner.FeatureAgentNetwork); f.State != events.ContainmentActive || !strings.Contains(f.Detail, "container's own network namespace") {
		t.Errorf("agent_network: %+v", f)
	}
	if f, _ := rec.Feature("network_isolation"); f.State != events.ContainmentActive {
		t.Errorf("the commands' network: %+v", f)
	}
	if strings.Contains(logs.String(), "version command failed") {
		t.Errorf("the agent's version command failed in the image")
	}
	if left := runContainers(t, "suite", "ctr-agent"); len(left) > 0 {
		t.Fatalf("containers left after the run ended: %v", left)
	}
}

// ctrSlowAgent starts a run whose containerised agent waits 60s on its
// first call, and waits until that call is a started turn and the agent
// runs; marker is in the agent's command line.
func ctrSlowAgent(t *testing.T, e *env, image, run, budget string) (marker string) {
	t.Helper()
	marker = "marker-" + run + "-" + time.Now().Format("150405.000000000")
	slow := "turns:\n  - text: thinking\n    delay: 60s\n"
	tr := agentTreatment(t, slow, containerAgent, "{{.Instruction}} "+marker)
	p, err := fleettest.Publish(e.ctx, e.b, ctrAgentCase(t, image, budget, ""), tr)
	must(t, err)
	must(t, fleettest.Request(e.ctx, e.b, "suite", run, p, 1))
	must(t, fleettest.Await(e.ctx, e.b, "suite", run, func(l bus.RunLog) bool {
		return len(kinds(l, events.KindTurnStarted)) > 0
	}))
	if !processWith(marker) {
		t.Fatal("the agent is not running")
	}
	if n := len(runContainers(t, "suite", run)); n != 1 {
		t.Fatalf("%d containers of the run while the agent runs, want 1", n)
	}
	return marker
}

// A cancel while the containerised agent's call waits for the model ends
// the run cancelled: the agent's process is gone and so is the container.
func TestExternalAgentInAContainerCancelMidCall(t *testing.T) {
	image := miniagentImage(t)
	e, _ := startWith(t)
	marker := ctrSlowAgent(t, e, image, "ctr-cancel", "{steps: 10, wall: 5m}")
	must(t, e.b.Controls().Send(e.ctx, "suite", "ctr-cancel", events.Control{Signal: events.SignalCancel, Reason: "enough"}))
	_, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", "ctr-cancel")
	must(t, err)
	if end.Status != events.RunCancelled {
		t.Fatalf("ended %s (%s), want cancelled", end.Status, end.Reason)
	}
	if processWith(marker) {
		t.Fatal("the agent outlived the cancel")
	}
	if left := runContainers(t, "suite", "ctr-cancel"); len(left) > 0 {
		t.Fatalf("containers left after the run ended: %v", left)
	}
}

// The wall-time budget ends a containerised agent whose call outlasts it:
// exhausted, the agent and its container gone.
func TestExternalAgentInAContainerPastTheWallBudget(t *testing.T) {
	image := miniagentImage(t)
	e, _ := startWith(t)
	marker := ctrSlowAgent(t, e, image, "ctr-wall", "{steps: 10, wall: 20s}")
	_, end, err := fleettest.WaitEnded(e.ctx, e.b, "suite", "ctr-wall")
	must(t, err)
	if end.Status != events.RunExhausted || end.Reason != runner.ReasonWallLimit {
		t.Fatalf("ended %s (%s), want exhausted %s", end.Status, end.Reason, runner.ReasonWallLimit)
	}
	if processWith(marker) {
		t.Fatal("the agent outlived the wall budget")
	}
	if left := runContainers(t, "suite", "ctr-wall"); len(left) > 0 {
		t.Fatalf("containers left after the run ended: %v", left)
	}
}

// An image without the agent's command ends the run errored at once,
// naming the image and the command: no turn, no hang, not incomplete.
func TestExternalAgentMissingFromTheImageEndsNamingIt(t *testing.T) {
	image := sandboxtest.Image(t, "plain")
	e, _ := startWith(t)
	for _, cmd := range []string{"/usr/local/bin/no-such-agent", "no-such-agent"} {
		run := "ctr-missing-" + strings.Trim(filepath.Base(cmd), "/")
		if strings.HasPrefix(cmd, "/") {
			run += "-abs"
		}
		log, end := e.runAgent(ctrAgentCase(t, image, "{steps: 10, wall: 2m}", ""), agentTreatment(t, fixScript, cmd, "{{.Instruction}}"), run)
		if end.Status != events.RunErrored || !strings.Contains(end.Reason, "in image "+image) || !strings.Contains(end.Reason, cmd+": ") {
			t.Fatalf("%s: ended %s (%s), want errored naming the image %s and the command", cmd, end.Status, end.Reason, image)
		}
		if n := len(kinds(log, events.KindTurnStarted)); n != 0 {
			t.Fatalf("%s: %d turns started", cmd, n)
		}
		if left := runContainers(t, "suite", run); len(left) > 0 {
			t.Fatalf("%s: containers left after the run ended: %v", cmd, left)
		}
	}
}

// What an agent's network reaches is in the claim's record: in a
// container with its own loopback up (network: loopback), the endpoint
// and what the container serves itself; on the host, the host's network
// (the feature is off: the agent keeps it).
func TestExternalAgentNetworkIsRecorded(t *testing.T) {
	image := miniagentImage(t)
	e, _ := startWith(t)
	script := "turns:\n  - text: nothing to do\n"
	log, _ := e.runAgent(ctrAgentCase(t, image, "{steps: 10, wall: 2m}", cases.NetworkLoopback),
		agentTreatment(t, script, containerAgent, "{{.Instruction}}"), "ctr-net-lo")
	rec := e.claimedContainment(kinds(log, events.KindRunClaimed)[0])
	if f, _ := rec.Feature(runner.FeatureAgentNetwork); f.State != events.ContainmentActive || !strings.Contains(f.Detail, "nothing outside the container") {
		t.Errorf("in a container with loopback: agent_network %+v", f)
	}
	if f, _ := rec.Feature("network_isolation"); !strings.Contains(f.Detail, "only its own loopback up") {
		t.Errorf("the commands' network: %+v", f)
	}
	log, _ = e.runAgent(fixtureCase(t, "{steps: 10, wall: 2m}"), agentTreatment(t, script, buildAgent(t), "{{.Instruction}}"), "host-net")
	rec = e.claimedContainment(kinds(log, events.KindRunClaimed)[0])
	if f, _ := rec.Feature(runner.FeatureAgentNetwork); f.State != events.ContainmentOff || !strings.Contains(f.Detail, "whatever the host reaches") {
		t.Errorf("on the host: agent_network %+v", f)
	}
}
