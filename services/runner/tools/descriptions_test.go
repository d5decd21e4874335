package tools

import (
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// The contracts of the default registry are part of every runner's
// claimed identity and of every request's tools: a registry given no
// descriptions must offer exactly what it offered before descriptions
// could be replaced. The digest was taken before WithDescriptions existed.
func TestTheDefaultContractsStayTheSame(t *testing.T) {
	r, err := NewRegistry([]string{"read_file", "list_files", "write_file", "edit_file", "run_command", "task_complete"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Contracts()
	if err != nil {
		t.Fatal(err)
	}
	if d := events.DigestOf(c); d != "sha256:ab0c481493222162358d0cad71166a9cb5d974e37de044eea182ab009138e00e" {
		t.Errorf("the default contracts' digest is %s", d)
	}
}

// A replaced description is what the model is told (Specs) and what the
// contract records (Contracts), for that tool only; everything else of the
// tool (its schema, its checks) is the built-in one.
func TestADescriptionReplacesWhatTheModelIsTold(t *testing.T) {
	plain, err := NewRegistry([]string{"read_file", "run_command"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry([]string{"read_file", "run_command"}, WithDescriptions(map[string]string{"run_command": "Run ONE command."}))
	if err != nil {
		t.Fatal(err)
	}
	specs, before := r.Specs(), plain.Specs()
	if len(specs) != 2 || specs[1].Name != "run_command" || specs[1].Description != "Run ONE command." {
		t.Fatalf("specs %+v", specs)
	}
	if specs[0].Description != before[0].Description || string(specs[1].Parameters) != string(before[1].Parameters) {
		t.Fatal("a description changed more than itself")
	}
	c, err := r.Contracts()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c), `"description":"Run ONE command."`) {
		t.Fatalf("contracts %s", c)
	}
	if _, _, res := r.Check("run_command", `{"command":"true"}`); res != nil {
		t.Fatalf("a described tool's calls: %+v", res)
	}
	for _, bad := range []map[string]string{{"write_file": "not offered"}, {"run_command": " "}} {
		if _, err := NewRegistry([]string{"read_file", "run_command"}, WithDescriptions(bad)); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}
