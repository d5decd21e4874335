package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A local run that stops before its report says how to go on; a run of an
// external agent cut off cannot be resumed from the log (its process is
// gone), so the way on for it is retry, and the message says so.
func TestAStoppedRunOfAnExternalAgentSaysToRetryIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"suite.yaml": "name: lingering\ncases:\n  - {path: " + filepath.Join(demo, "cases/read-only/case.yaml") + "}\n" +
			"treatments:\n  - {path: agent.yaml}\ntrials: 1\ninputs: {allow_outside: [" + demo + "]}\n",
		// An agent that never answers: the run is cut off by --timeout.
		"agent.yaml": "id: sleeper\nmodel: {provider: scripted, scripts: " + filepath.Join(demo, "scripts") + "}\n" +
			"agent: {command: [/bin/sleep, \"600\"], version: [none]}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store := filepath.Join(dir, "store")
	code, _, errOut := runCLI(t, "run", filepath.Join(dir, "suite.yaml"), "--store", store, "--fsync", "interval", "--timeout", "3s")
	if code != exitIncomplete {
		t.Fatalf("run exited %d, want %d (gave up): %s", code, exitIncomplete, errOut)
	}
	if !strings.Contains(errOut, "factline retry lingering --store "+store) || !strings.Contains(errOut, "external agent") {
		t.Errorf("the message does not say to retry the external agent's run:\n%s", errOut)
	}
}

// A steer sent to an external agent's run is refused at once, saying why:
// the agent has no channel for it, so its runner never accepts one, and
// the command used to wait out --wait and then ask whether a runner was on
// the run. Found by steering an OpenAI-SDK agent mid-call.
func TestSteeringAnExternalAgentsRunIsRefusedSayingWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"suite.yaml": "name: unsteerable\ncases:\n  - {path: " + filepath.Join(demo, "cases/read-only/case.yaml") + "}\n" +
			"treatments:\n  - {path: agent.yaml}\ntrials: 1\ninputs: {allow_outside: [" + demo + "]}\n",
		"agent.yaml": "id: sleeper\nmodel: {provider: scripted, scripts: " + filepath.Join(demo, "scripts") + "}\n" +
			"agent: {command: [/bin/sleep, \"600\"], version: [none]}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store := filepath.Join(dir, "store")
	if code, _, errOut := runCLI(t, "run", filepath.Join(dir, "suite.yaml"), "--store", store, "--fsync", "interval", "--timeout", "3s"); code != exitIncomplete {
		t.Fatalf("run exited %d, want %d (gave up): %s", code, exitIncomplete, errOut)
	}
	code, _, errOut := runCLI(t, "steer", "read-only-sleeper-t1", "also print the answer", "--store", store, "--wait", "5s")
	if code != 1 || !strings.Contains(errOut, "external agent") || !strings.Contains(errOut, "nothing was sent") {
		t.Fatalf("steer exited %d: %s; want 1, refused at once as the run of an external agent", code, errOut)
	}
}
