package suites

import (
	"path/filepath"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/version"
)

// The identity of a treatment that sets nothing new is part of the log's
// contract: a report compares the identities a suite's run.requested
// facts recorded, possibly written by an older build, with those a newer
// build writes. These values were taken before treatments could set
// their scaffold (prompt, tools, tool descriptions); a treatment that sets
// none of it must keep them, component by component and as a digest (the
// harness component, which names the test binary's build, is pinned to a
// fixed value for the digest).
func TestIdentityOfAnExistingTreatmentStaysTheSame(t *testing.T) {
	files := suiteFiles(goodSuite)
	files["treatments/hosted.yaml"] = "id: hosted\nmodel: {provider: openai, name: m, base_url: 'http://127.0.0.1:1/v1', temperature: 0, seed: 7, input_price: 3, output_price: 9}\n" +
		"context: {mode: window, window_turns: 2, keep_tools: [run_command]}\ncache: {mode: read_write}\n"
	dir := tree(t, files)
	s, err := Load(filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hosted, err := cases.LoadTreatment(filepath.Join(dir, "treatments/hosted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	harness, err := version.HarnessOf(version.Current(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		treatment  int // index in s.Treatments, -1: hosted
		components map[string]string
		digest     events.Digest
	}{
		{"scripted", 0, map[string]string{
			"capabilities": `["edit_file","list_files","read_file","run_command","task_complete","write_file"]`,
			"context":      `{"mode":"full"}`,
			"model":        `{"provider":"scripted","script":"sha256:dfb16d8cf070d6ed4b993885bfd03a6c28d4c5c6e8c877861efa8c8e8a6bc209"}`,
			"stall":        `{"version":2,"repeated_failure":2,"repeated_observation":3,"repeated_error":3,"idle_turns":3,"alternation":3,"failing_verifications":6,"repair_budget":2}`,
		}, "sha256:0f78e45f5eed118786406c286fe3117b381641d6d5e26ffc46416f0ad39f6586"},
		{"stall off", 1, map[string]string{
			"capabilities": `["edit_file","list_files","read_file","run_command","task_complete","write_file"]`,
			"context":      `{"mode":"full"}`,
			"model":        `{"provider":"scripted","script":"sha256:dfb16d8cf070d6ed4b993885bfd03a6c28d4c5c6e8c877861efa8c8e8a6bc209"}`,
			"stall":        `{"version":2,"repeated_failure":0,"repeated_observation":3,"repeated_error":3,"idle_turns":3,"alternation":3,"failing_verifications":6,"repair_budget":2}`,
		}, "sha256:173ab5db982f7358773af28a7c8c689e7743b2eebeec2bbd28b51d190b4df653"},
		{"hosted, windowed, cached", -1, map[string]string{
			"cache":        `read_write`,
			"capabilities": `["edit_file","list_files","read_file","run_command","task_complete","write_file"]`,
			"context":      `{"mode":"window","window_turns":2,"keep_tools":["run_command"]}`,
			"model":        `{"provider":"openai","name":"m","base_url":"http://127.0.0.1:1/v1","temperature":0,"seed":7,"input_price":3,"output_price":9}`,
			"stall":        `{"version":2,"repeated_failure":2,"repeated_observation":3,"repeated_error":3,"idle_turns":3,"alternation":3,"failing_verifications":6,"repair_budget":2}`,
		}, "sha256:73c56f732e4e95324c23b598be8ee4445a6a79676a992d40b3372b3acff46825"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := hosted
			if c.treatment >= 0 {
				tr = s.Treatments[c.treatment]
			}
			_, comps, err := AgentIdentity(s.Cases[0], tr)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, comp := range comps {
				got[comp.Name] = comp.Value
			}
			if got["harness"] != harness {
				t.Errorf("harness %q, want the build's %q", got["harness"], harness)
			}
			delete(got, "harness")
			for name, want := range c.components {
				if got[name] != want {
					t.Errorf("component %s = %s, want %s", name, got[name], want)
				}
			}
			for name := range got {
				if _, ok := c.components[name]; !ok {
					t.Errorf("component %s = %s is new", name, got[name])
				}
			}
			digest, _, err := WithComponent(comps, ComponentHarness, "pinned-harness")
			if err != nil {
				t.Fatal(err)
			}
			if digest != c.digest {
				t.Errorf("identity %s, want %s", digest, c.digest)
			}
		})
	}
}
