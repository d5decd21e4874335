package runner_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox/sandboxtest"
)

// qwenDir is where examples/external-agent/install.sh puts qwen-code.
const qwenDir = "/usr/local/lib/factline-agents/qwen-0.24.4"

// nodeImage is the busybox test image with this host's node, the shared
// libraries it loads (as ldd lists them, at their paths), /usr/bin/env
// (npm's launchers start with #!/usr/bin/env node) and the npm agent
// installed at dir, at the same path: an image a real npm agent runs in
// with no registry reachable.
func nodeImage(t *testing.T, variant, dir string) string {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("%v: examples/external-agent/install.sh installs it (scripts/test-deps runs it)", err)
	}
	files := map[string]string{dir: dir}
	// node wherever this host has it (a tarball install puts it in
	// /usr/local/bin), at /usr/bin/node in the image.
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): the npm agents need it", err)
	}
	for at, bin := range map[string]string{"/usr/bin/node": node, "/usr/bin/env": "/usr/bin/env"} {
		real, err := filepath.EvalSymlinks(bin)
		must(t, err)
		files[at] = real
		out, err := exec.Command("ldd", real).Output()
		if err != nil {
			t.Fatalf("ldd %s: %v", real, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
				files[f[2]] = f[2]
			case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
				files[f[0]] = f[0]
			}
		}
	}
	return sandboxtest.ImageWith(t, variant, files)
}

// A real npm agent, qwen-code, runs in a container of an image holding
// node and qwen and nothing of the host's network: it reaches its
// endpoint inside the container, its own write_file tool writes the
// workspace at the environment's workdir (a new file: qwen refuses to
// overwrite one it has not read), and its calls are recorded
// turns; the run ends done and leaves no container.
func TestNpmAgentQwenInAContainer(t *testing.T) {
	t.Parallel()
	image := nodeImage(t, "node-qwen", qwenDir)
	e, _ := startWith(t)
	script := `turns:
  - calls:
      - {name: write_file, args: {file_path: /src/from-qwen.txt, content: "4\n"}}
    usage: {input_tokens: 9000, output_tokens: 30}
  - text: from-qwen.txt holds 4.
    usage: {input_tokens: 9100, output_tokens: 15}
  - text: Nothing to remember.
    usage: {input_tokens: 9200, output_tokens: 5}
`
	tr := agentTreatment(t, script, qwenDir+"/node_modules/.bin/qwen", "--yolo", "--auth-type", "openai", "{{.Instruction}}")
	tr.ID = "qwen"
	tr.Agent.Env = map[string]string{"QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}
	c := ctrAgentCase(t, image, "{steps: 10, wall: 3m}", cases.NetworkNone)
	// node and qwen take more than the static agent's limits (under
	// 256 MiB qwen exits 1 before its first call).
	c.Environment.MemoryBytes, c.Environment.Pids = 2<<30, 512
	log, end := e.runAgent(c, tr, "ctr-qwen")
	if end.Status != events.RunDone {
		t.Fatalf("ended %s (%s), want done", end.Status, end.Reason)
	}
	started := kinds(log, events.KindTurnStarted)
	if len(started) < 2 {
		t.Fatalf("%d turns, want at least 2", len(started))
	}
	body, err := e.b.Blobs().Get(e.ctx, started[1].Body.(events.TurnStarted).ContextDigest)
	must(t, err)
	for _, want := range []string{`"write_file"`, `"run_shell_command"`, "Make ./check.sh pass"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("turn 2's stored request lacks %s: it is not qwen's", want)
		}
	}
	var sealed *events.CandidateSealed
	for _, f := range log.Facts() {
		if b, ok := f.Body.(events.CandidateSealed); ok {
			sealed = &b
		}
	}
	if sealed == nil || sealed.SnapshotDigest == c.FixtureDigest {
		b := string(body)
		t.Fatalf("the candidate %+v is not the workspace qwen changed; its request ends %s", sealed, b[max(0, len(b)-1500):])
	}
	if rec := e.claimedContainment(kinds(log, events.KindRunClaimed)[0]); rec == nil || rec.Image == nil {
		t.Fatalf("run.claimed names no image: %+v", rec)
	}
	if left := runContainers(t, "suite", "ctr-qwen"); len(left) > 0 {
		t.Fatalf("containers left after the run ended: %v", left)
	}
}
