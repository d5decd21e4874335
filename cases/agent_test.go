package cases

import (
	"strings"
	"testing"
)

// A treatment's agent is checked when it is read: a template naming a
// field the runner does not give, an unknown wire and a missing command
// are errors naming the field.
func TestAgentTemplatesAreCheckedWhenRead(t *testing.T) {
	for yaml, want := range map[string]string{
		"agent: {command: [qwen, '{{.Instructions}}']}":     "agent.command[1]",
		"agent: {command: [qwen], env: {X: '{{.Secret}}'}}": "agent.env.X",
		"agent: {command: [qwen], stdin: '{{'}":             "agent.stdin",
		"agent: {command: [qwen], wire: grpc}":              "agent.wire",
		"agent: {command: []}":                              "agent.command",
		"agent: {command: [qwen]}\nscaffold: {prompt: hi}":  "scaffold: a scaffold shapes the built-in loop",
	} {
		_, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m}\n"+yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %s", yaml, err, want)
		}
	}
}

// Render fills every template; the default version command is the
// agent's own --version.
func TestAgentRender(t *testing.T) {
	tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m}\n"+
		"agent: {command: [qwen, --yolo, '{{.Instruction}}'], env: {URL: '{{.BaseURL}}'}, stdin: '{{.Case}}'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := tr.Agent.Render(AgentVars{Instruction: "fix it", Case: "c1", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Argv, " ") != "qwen --yolo fix it" || r.Env["URL"] != "http://127.0.0.1:1/v1" || r.Stdin != "c1" {
		t.Fatalf("rendered %+v", r)
	}
	if v := tr.Agent.VersionArgv(); strings.Join(v, " ") != "qwen --version" {
		t.Fatalf("version argv %v", v)
	}
	tr.Agent.Version = []string{AgentNoVersion}
	if v := tr.Agent.VersionArgv(); v != nil {
		t.Fatalf("version none gave %v", v)
	}
}

// Each wire the endpoint speaks may be named, and names the variables
// that point the agent at it: OpenAI's for both OpenAI wires, Anthropic's
// (without /v1: its clients add it) for Messages.
func TestAgentWiresNameTheirVariables(t *testing.T) {
	vars := AgentVars{Origin: "http://127.0.0.1:9", Token: "fl-x", Model: "m"}
	for wire, want := range map[string]map[string]string{
		"":                   {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "fl-x", "OPENAI_MODEL": "m"},
		"openai-responses":   {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "fl-x", "OPENAI_MODEL": "m"},
		"anthropic-messages": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "fl-x", "ANTHROPIC_MODEL": "m"},
	} {
		tr, err := ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m}\nagent: {command: [a], wire: '"+wire+"'}\n"))
		if err != nil {
			t.Fatalf("wire %q: %v", wire, err)
		}
		got := tr.Agent.WireEnv(vars)
		if len(got) != len(want) {
			t.Errorf("wire %q: env %v, want %v", wire, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("wire %q: %s=%q, want %q", wire, k, got[k], v)
			}
		}
		if base := tr.Agent.BaseURLOf(vars.Origin); base != want["OPENAI_BASE_URL"]+want["ANTHROPIC_BASE_URL"] {
			t.Errorf("wire %q: .BaseURL %q", wire, base)
		}
	}
}
