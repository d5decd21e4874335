package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/sandbox/sandboxtest"
)

// envFixtureCase is the fixture case with an environment of image.
func envFixtureCase(t *testing.T, image string) *cases.Case {
	t.Helper()
	c := fixtureCase(t, "{steps: 3}")
	c.Environment = &cases.Environment{Image: image, Workdir: "/src", Network: cases.NetworkNone, MemoryBytes: 128 << 20, Pids: 64}
	return c
}

// runContainers lists the engine's containers of one run.
func runContainers(t *testing.T, suite, run string) []string {
	t.Helper()
	names, err := listLabelled(suite, run)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func listLabelled(suite, run string) ([]string, error) {
	e := sandbox.EngineFromEnv()
	out, err := execOutput(e.Bin, "ps", "--all", "--format", "{{.Names}}",
		"--filter", "label="+sandbox.LabelSuite+"="+suite, "--filter", "label="+sandbox.LabelRun+"="+run)
	return strings.Fields(out), err
}

// run_command runs in the case's image: it sees the image's files and
// not the host's, in the environment's workdir, and what it writes lands
// in the workspace (the check then passes on the host's copy of it).
// run.claimed records the container, the image by digest and the limits
// read back inside, and no container of the run is left when it ends.
func TestRunCommandRunsInTheCaseEnvironment(t *testing.T) {
	t.Parallel()
	image := sandboxtest.Image(t, "plain")
	hostOnly := filepath.Join(reachableDir(t), "host-only")
	must(t, os.WriteFile(hostOnly, []byte("x"), 0o644))
	e, _ := startWith(t)
	script := `turns:
  - calls:
      - {id: look, name: run_command, args: {command: "cat ` + sandboxtest.ImageMarker + `; test -e ` + hostOnly + ` && echo host-visible; pwd; echo 4 > answer.txt"}}
`
	log, end := e.run(envFixtureCase(t, image), script, "in-image")
	claims := kinds(log, events.KindRunClaimed)
	if len(claims) != 1 {
		t.Fatalf("%d claims", len(claims))
	}
	rec := e.claimedContainment(claims[0])
	want, err := sandbox.EngineFromEnv().ResolveImage(context.Background(), image)
	must(t, err)
	if rec == nil || rec.Provider != "container" || rec.Image == nil || rec.Image.Digest != want || rec.Image.Ref != image {
		t.Fatalf("run.claimed containment %+v, want the container of %s", rec, want)
	}
	if f, _ := rec.Feature(sandbox.FeatureMemory); f.State != events.ContainmentActive || f.Limit != 128<<20 {
		t.Errorf("memory: %+v", f)
	}
	d := kinds(log, events.KindDispatchComplete)[0].Body.(events.DispatchCompleted)
	var obs struct {
		Output string `json:"output"`
	}
	must(t, json.Unmarshal([]byte(d.Output), &obs))
	if d.Error != nil || obs.Output != "plain\n/src\n" {
		t.Fatalf("the command should see the image's marker, not the host's file, in /src: %+v %q", d.Error, obs.Output)
	}
	if end.Status == "" {
		t.Fatal("no ending")
	}
	if left := runContainers(t, "suite", "in-image"); len(left) > 0 {
		t.Fatalf("containers left after the run ended: %v", left)
	}
}

// An image the engine does not hold ends the run errored, naming the
// image, before any command: no dispatch is intended.
func TestAMissingImageEndsTheRunBeforeAnyCommand(t *testing.T) {
	t.Parallel()
	e, _ := startWith(t)
	script := `turns:
  - calls:
      - {id: look, name: run_command, args: {command: "true"}}
`
	c := envFixtureCase(t, "localhost/factline-no-such-image:1")
	log, end := e.run(c, script, "no-image")
	if end.Status != events.RunErrored || !strings.Contains(end.Reason, `environment image "localhost/factline-no-such-image:1": not found`) {
		t.Fatalf("ending %s %q", end.Status, end.Reason)
	}
	if n := len(kinds(log, events.KindDispatchIntended)); n != 0 {
		t.Fatalf("%d dispatches intended", n)
	}
}

// A container an earlier lease left behind (its runner died) is removed
// when the run is taken: none of the run's containers outlive it.
func TestATakeoverRemovesTheContainerOfAnEarlierLease(t *testing.T) {
	t.Parallel()
	image := sandboxtest.Image(t, "plain")
	e, logs := startWith(t)
	orphan := sandbox.ContainerName("suite", "orphaned", 7)
	if _, err := execOutput(sandbox.EngineFromEnv().Bin, "create", "--name", orphan, "--label", sandbox.LabelSuite+"=suite",
		"--label", sandbox.LabelRun+"=orphaned", "--entrypoint", "sleep", image, "600"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = execOutput(sandbox.EngineFromEnv().Bin, "rm", "--force", orphan) })
	if left := runContainers(t, "suite", "orphaned"); len(left) != 1 {
		t.Fatalf("the orphan is not there: %v", left)
	}
	script := `turns:
  - calls:
      - {id: look, name: run_command, args: {command: "echo 4 > answer.txt"}}
`
	e.run(envFixtureCase(t, image), script, "orphaned")
	if left := runContainers(t, "suite", "orphaned"); len(left) > 0 {
		t.Fatalf("containers left after the run ended: %v", left)
	}
	if !strings.Contains(logs.String(), orphan) {
		t.Errorf("the runner did not say it removed %s", orphan)
	}
}

func execOutput(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %v: %w: %s", bin, args, err, out)
	}
	return string(out), nil
}
