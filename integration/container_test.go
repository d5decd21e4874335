package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet/fleettest"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/sandbox/sandboxtest"
)

// suiteContainers lists the engine's containers of one suite.
func suiteContainers(t *testing.T, suite string) []string {
	t.Helper()
	out, err := exec.Command(sandbox.EngineFromEnv().Bin, "ps", "--all", "--format", "{{.Names}}",
		"--filter", "label="+sandbox.LabelSuite+"="+suite).Output()
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return strings.Fields(string(out))
}

// writeSlowContainerSuite writes a suite of one case whose commands run in
// image and whose first command outlives the moment the test kills its
// runner.
func writeSlowContainerSuite(t *testing.T, image string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"suite.yaml": "name: ctrkill\ncases: [{path: case.yaml}]\ntreatments: [{path: t.yaml}]\ntrials: 1\n",
		"case.yaml": "id: slow\ninstruction: wait, then finish\nbudget: {steps: 3}\ntools: [run_command, task_complete]\n" +
			"environment: {image: \"" + image + "\", pids: 64}\n",
		"t.yaml": "id: scripted\nmodel: {provider: scripted, scripts: scripts}\n",
		"scripts/slow.yaml": `turns:
  - calls:
      - {id: wait, name: run_command, args: {command: "echo waiting; sleep 60", timeout_seconds: 8}}
  - calls:
      - {id: done, name: task_complete, args: {status: blocked, reason: the wait never ends}}
`,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "suite.yaml")
}

// Must show: a runner SIGKILLed mid-attempt, with a command running in
// the attempt's container, leaves that container behind (the kill gives it
// no chance to clean up); the runner that takes the run over removes it,
// runs the attempt to its end in a container of its own lease, and when
// the run has ended no container of the suite is left.
func TestARunnerKilledMidAttemptLeavesNoContainer(t *testing.T) {
	t.Parallel()
	// The factline binary is built (once) before any context of the
	// test starts: the build is no part of what the context bounds.
	factlineBinary(t)
	image := sandboxtest.Image(t, "plain")
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	startFleetIn(t, ctx, fleetSpec{copies: 1, ackWait: 2 * time.Second, connect: connector(t, srv, bus.Config{}), noRunner: true})
	runnerArgs := []string{"serve", "--services", "runner", "--nats", srv.ClientURL(), "--instances", "1", "--ack-wait", faultAckWait,
		"--work-dir", sandboxtest.ReachableDir(t)}
	first := startProc(t, runnerArgs...)
	b := connector(t, srv, bus.Config{})()

	intended := make(chan string, 16)
	watchFacts(t, b.Conn(), "ctrkill", func(f events.Fact) {
		if _, ok := f.Body.(events.DispatchIntended); ok {
			intended <- f.Run
		}
	})
	submitSuite(t, ctx, b, writeSlowContainerSuite(t, image))
	var run string
	select {
	case run = <-intended:
	case <-ctx.Done():
		t.Fatal("the command was never dispatched")
	}
	// The command is running in the container: kill its runner now.
	first.crash()
	left := suiteContainers(t, "ctrkill")
	if len(left) != 1 || left[0] != sandbox.ContainerName("ctrkill", run, 1) {
		t.Fatalf("after the kill the first lease's container should be there, found %v", left)
	}

	startProc(t, runnerArgs...)
	log, end, err := fleettest.WaitEnded(ctx, b, "ctrkill", run)
	if err != nil {
		t.Fatal(err)
	}
	claims := 0
	for _, f := range log.Facts() {
		if c, ok := f.Body.(events.RunClaimed); ok {
			claims++
			rec, err := b.Blobs().ClaimedContainment(ctx, c)
			if err != nil || rec == nil || rec.Provider != "container" {
				t.Errorf("claim of lease %d records %+v (%v)", c.Lease, rec, err)
			}
		}
	}
	if claims < 2 {
		t.Fatalf("the run was never taken over (%d claims), ended %s: %s", claims, end.Status, end.Reason)
	}
	if left := suiteContainers(t, "ctrkill"); len(left) > 0 {
		t.Fatalf("containers left after the takeover finished: %v", left)
	}
}

// The example suite runs with one command once its script built the
// image: its case needs a tool only the image has, and both runs pass.
func TestTheContainerExampleRuns(t *testing.T) {
	t.Parallel()
	// The factline binary is built (once) before any context of the
	// test starts: the build is no part of what the context bounds.
	factlineBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "../examples/container/build-image.sh").CombinedOutput(); err != nil {
		t.Fatalf("build-image.sh: %v\n%s", err, out)
	}
	if _, err := exec.LookPath("colsum"); err == nil {
		t.Fatal("this host has colsum: the example proves nothing here")
	}
	out, err := exec.CommandContext(ctx, factlineBinary(t), "run", "../examples/container/suite.yaml", "--store", t.TempDir(), "--fsync", "interval", "--json").Output()
	if err != nil {
		t.Fatalf("factline run: %v", err)
	}
	var report struct {
		Treatments []struct {
			Passed int `json:"passed"`
		} `json:"treatments"`
	}
	if err := json.Unmarshal(out, &report); err != nil || len(report.Treatments) != 1 || report.Treatments[0].Passed != 2 {
		t.Fatalf("report %s (%v), want both runs passed", out, err)
	}
}
