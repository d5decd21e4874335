package cases

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
)

// Agent is an external agent a treatment runs instead of the runner's own
// loop: a command started in the attempt's workspace whose model calls go
// to a model endpoint the runner serves for that attempt alone
// (docs/agents.md). Every string of Command, Env and Stdin is a Go
// template over AgentVars; a field the template names that AgentVars lacks
// is an error when the treatment is loaded.
type Agent struct {
	// Command is the argv (not a shell line). Its first element is looked
	// up in PATH unless it holds a slash.
	Command []string `yaml:"command" json:"command"`
	// Env adds variables to the agent's environment (the attempt's minimal
	// one plus the wire's, WireEnv). A key set here replaces the wire's.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Stdin is written to the agent's standard input, which is then
	// closed (empty: the agent reads end of file at once).
	Stdin string `yaml:"stdin,omitempty" json:"stdin,omitempty"`
	// Wire is the API the endpoint speaks (AgentWires; empty:
	// WireOpenAIChat).
	Wire string `yaml:"wire,omitempty" json:"wire,omitempty"`
	// Version is the argv whose output names the agent's version in its
	// identity (empty: Command[0] --version; ["none"]: do not ask).
	Version []string `yaml:"version,omitempty" json:"version,omitempty"`
}

// AgentVars are what an agent's templates may name.
type AgentVars struct {
	// Instruction is the case's instruction.
	Instruction string
	// Case is the case ID.
	Case string
	// BaseURL is the endpoint's base for the agent's wire (BaseURLOf):
	// ending in /v1 for OpenAI wires, the origin for Anthropic's.
	BaseURL string
	// Origin is the endpoint without a path, http://127.0.0.1:<port>.
	Origin string
	// Token is the attempt's bearer token for the endpoint.
	Token string
	// Model is the model name the agent should ask for (the treatment's
	// model name; the endpoint answers with the treatment's model
	// whatever the agent names).
	Model string
	// Workspace is the absolute path of the attempt's workspace.
	Workspace string
}

// Agent wires: the APIs an agent's endpoint may speak.
const (
	// WireOpenAIChat is OpenAI Chat Completions (POST /v1/chat/completions).
	WireOpenAIChat = "openai-chat"
	// WireOpenAIResponses is OpenAI's Responses API (POST /v1/responses).
	WireOpenAIResponses = "openai-responses"
	// WireAnthropicMessages is Anthropic's Messages API (POST /v1/messages).
	WireAnthropicMessages = "anthropic-messages"
)

// AgentWires are the wires the runner serves. The endpoint answers each
// on its own path; the wire an agent names chooses the variables that
// point it there (WireEnv) and its .BaseURL.
var AgentWires = []string{WireOpenAIChat, WireOpenAIResponses, WireAnthropicMessages}

// BaseURLOf is the base URL the agent's wire takes for the endpoint at
// origin (http://127.0.0.1:<port>): OpenAI's clients take it with /v1,
// Anthropic's without (they add /v1/messages).
func (a *Agent) BaseURLOf(origin string) string {
	if a.WireOf() == WireAnthropicMessages {
		return origin
	}
	return origin + "/v1"
}

// WireEnv are the variables that point the agent at the endpoint, by its
// wire: OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL for both OpenAI
// wires, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY and ANTHROPIC_MODEL for
// Anthropic's (the model's variable only when the treatment's model
// has a name). v.Origin is the endpoint's origin.
func (a *Agent) WireEnv(v AgentVars) map[string]string {
	prefix := "OPENAI_"
	if a.WireOf() == WireAnthropicMessages {
		prefix = "ANTHROPIC_"
	}
	env := map[string]string{prefix + "BASE_URL": a.BaseURLOf(v.Origin), prefix + "API_KEY": v.Token}
	if v.Model != "" {
		// An empty name would be taken as the model to ask for.
		env[prefix+"MODEL"] = v.Model
	}
	return env
}

// AgentNoVersion as the whole Version argv asks for no version output.
const AgentNoVersion = "none"

// WireOf is the agent's wire, WireOpenAIChat when it names none.
func (a *Agent) WireOf() string {
	if a == nil || a.Wire == "" {
		return WireOpenAIChat
	}
	return a.Wire
}

// VersionArgv is the argv whose output names the agent's version, nil for
// none.
func (a *Agent) VersionArgv() []string {
	switch {
	case a == nil || len(a.Command) == 0:
		return nil
	case len(a.Version) == 1 && a.Version[0] == AgentNoVersion:
		return nil
	case len(a.Version) > 0:
		return slices.Clone(a.Version)
	}
	return []string{a.Command[0], "--version"}
}

// check refuses an agent that cannot start: no command, an unknown wire,
// or a template that does not parse or names a field AgentVars lacks.
func (a *Agent) check(field string) error {
	if a == nil {
		return nil
	}
	if len(a.Command) == 0 || strings.TrimSpace(a.Command[0]) == "" {
		return fieldErr(field+".command", "required: the agent's argv, e.g. [qwen, --yolo, \"{{.Instruction}}\"]")
	}
	if !slices.Contains(AgentWires, a.WireOf()) {
		return fieldErr(field+".wire", "unknown wire %q (want one of %v)", a.Wire, AgentWires)
	}
	_, err := a.Render(AgentVars{})
	return err
}

// resolve makes a command that starts with ./ or ../ absolute, relative
// to the treatment file at path: an attempt runs it in its own workspace.
func (a *Agent) resolve(path string) error {
	if a == nil {
		return nil
	}
	cmd := a.Command[0]
	if !strings.HasPrefix(cmd, "./") && !strings.HasPrefix(cmd, "../") {
		return nil
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(path), cmd))
	if err != nil {
		return &Error{File: path, Field: "agent.command[0]", Msg: err.Error()}
	}
	a.Command[0] = abs
	return nil
}

// RenderedAgent is an agent's command with its templates filled in.
type RenderedAgent struct {
	Argv  []string
	Env   map[string]string
	Stdin string
}

// Render fills the agent's templates with v. A template naming a field
// AgentVars lacks is an error naming the field of the agent it is in.
func (a *Agent) Render(v AgentVars) (RenderedAgent, error) {
	out := RenderedAgent{Env: map[string]string{}}
	for i, s := range a.Command {
		r, err := renderAgent(fmt.Sprintf("agent.command[%d]", i), s, v)
		if err != nil {
			return RenderedAgent{}, err
		}
		out.Argv = append(out.Argv, r)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return RenderedAgent{}, fieldErr("agent.env", "%q is not an environment variable name", k)
		}
		r, err := renderAgent("agent.env."+k, a.Env[k], v)
		if err != nil {
			return RenderedAgent{}, err
		}
		out.Env[k] = r
	}
	var err error
	out.Stdin, err = renderAgent("agent.stdin", a.Stdin, v)
	return out, err
}

func renderAgent(field, text string, v AgentVars) (string, error) {
	t, err := template.New(field).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fieldErr(field, "template: %v", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return "", fieldErr(field, "template: %v (the fields are .Instruction, .Case, .BaseURL, .Token, .Model, .Workspace)", err)
	}
	return b.String(), nil
}
