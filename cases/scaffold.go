package cases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// DefaultSystemPrompt is the system message of every run whose treatment
// sets no prompt. It is part of what the model sees: changing it changes
// every request, and so the rendered requests' golden digests.
const DefaultSystemPrompt = "You are an agent working in a workspace directory through tools. " +
	"Tool results are JSON: {\"ok\":true,...} or {\"ok\":false,\"error\":{...}}. " +
	"Each tool call has an evidence ref \"t<turn>/<call-id>\" shown with its result. " +
	"When the task is done, call task_complete with status \"done\" and cite the evidence refs that show it " +
	"(for example a passing check); if you cannot finish, call task_complete with status \"blocked\", a reason " +
	"and the unmet requirement ids. The harness checks every claim."

// Bounds of a treatment's scaffold (docs/case.md#bounds).
const (
	// MaxPromptBytes bounds a system prompt, as written and as rendered:
	// it is sent with every turn, like the instruction.
	MaxPromptBytes = MaxInstruction
	// MaxToolDescription bounds one tool description override.
	MaxToolDescription = 16 << 10
	// MaxPromptRanges bounds the range actions of a prompt template.
	MaxPromptRanges = 64
)

// Scaffold is what of the built-in agent a treatment changes: its system
// prompt, which built-in tools it offers and what the model is told they
// do. Each is part of the agent identity (suites.AgentIdentity), so two
// treatments that differ only in their prompt are an ablation of it.
type Scaffold struct {
	// Prompt is the system prompt, inline. With PromptFile it is that
	// file's text, read when the treatment is loaded, so that it travels
	// with the treatment and a runner never reads the file again.
	Prompt string `yaml:"prompt,omitempty" json:"prompt,omitempty"`
	// PromptFile is a file holding the prompt, relative to the treatment
	// file.
	PromptFile string `yaml:"prompt_file,omitempty" json:"-"`
	// Template renders the prompt as a Go text/template over the case's
	// fields (PromptData); a key the case lacks is an error, never an
	// empty string.
	Template bool `yaml:"template,omitempty" json:"template,omitempty"`
	// Tools, when set, are the built-in tools offered: of the tools a case
	// allows, only these.
	Tools []string `yaml:"tools,omitempty" json:"tools,omitempty"`
	// ToolDescriptions replaces what the model is told a built-in tool
	// does, by tool name.
	ToolDescriptions map[string]string `yaml:"tool_descriptions,omitempty" json:"tool_descriptions,omitempty"`
}

// check refuses a scaffold no runner could apply, naming the treatment.
func (s *Scaffold) check(field, treatment string) error {
	if s == nil {
		return nil
	}
	if s.Prompt != "" && s.PromptFile != "" {
		return fieldErr(field+".prompt_file", "treatment %s sets both prompt and prompt_file; set one", treatment)
	}
	if s.Template && s.Prompt == "" && s.PromptFile == "" {
		return fieldErr(field+".template", "treatment %s renders a template but sets no prompt or prompt_file", treatment)
	}
	if s.Prompt != "" {
		if err := s.checkPrompt(field+".prompt", treatment); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, name := range s.Tools {
		f := fmt.Sprintf("%s.tools[%d]", field, i)
		if !slices.Contains(BuiltinTools, name) {
			return fieldErr(f, "treatment %s offers unknown tool %q (the built-in tools are %v)", treatment, name, BuiltinTools)
		}
		if seen[name] {
			return fieldErr(f, "treatment %s offers tool %q twice", treatment, name)
		}
		seen[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(s.ToolDescriptions)) {
		f := field + ".tool_descriptions." + name
		desc := s.ToolDescriptions[name]
		switch {
		case !slices.Contains(BuiltinTools, name):
			return fieldErr(f, "treatment %s describes unknown tool %q (the built-in tools are %v)", treatment, name, BuiltinTools)
		case len(s.Tools) > 0 && !seen[name]:
			return fieldErr(f, "treatment %s describes tool %q, which its tools do not offer", treatment, name)
		case strings.TrimSpace(desc) == "":
			return fieldErr(f, "treatment %s gives tool %q an empty description (leave it out to keep the built-in one)", treatment, name)
		case len(desc) > MaxToolDescription:
			return fieldErr(f, "%d bytes; the limit is %d", len(desc), MaxToolDescription)
		}
	}
	return nil
}

// checkPrompt checks a prompt's text: not blank, within its bound, and a
// template that parses.
func (s *Scaffold) checkPrompt(field, treatment string) error {
	if strings.TrimSpace(s.Prompt) == "" {
		return fieldErr(field, "treatment %s sets an empty prompt (leave it out for the default)", treatment)
	}
	if len(s.Prompt) > MaxPromptBytes {
		return fieldErr(field, "%d bytes; the limit is %d", len(s.Prompt), MaxPromptBytes)
	}
	if s.Template {
		if _, err := parsePrompt(s.Prompt); err != nil {
			return fieldErr(field, "treatment %s: %v", treatment, err)
		}
	}
	return nil
}

// parsePrompt parses a prompt template and refuses what could make
// rendering it cost more than a small multiple of the case: the meter
// renders every treatment's prompt for every case a submitter sends. A
// template may not define or call templates (recursion could double its
// work at every level), nor range inside a range, nor range over anything
// but the case's fields (an integer would loop as often as it says), and
// it has at most MaxPromptRanges ranges; its output is cut off at
// MaxPromptBytes as it is written.
func parsePrompt(text string) (*template.Template, error) {
	tpl, err := template.New("prompt").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	if len(tpl.Templates()) > 1 {
		return nil, errors.New("a prompt template may not define templates (define, block)")
	}
	ranges := 0
	var walk func(n parse.Node, inRange bool) error
	walk = func(n parse.Node, inRange bool) error {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return nil
			}
			for _, c := range n.Nodes {
				if err := walk(c, inRange); err != nil {
					return err
				}
			}
		case *parse.TemplateNode:
			return fmt.Errorf("a prompt template may not call templates ({{template %q}})", n.Name)
		case *parse.IfNode:
			return walkBranch(&n.BranchNode, inRange, walk)
		case *parse.WithNode:
			return walkBranch(&n.BranchNode, inRange, walk)
		case *parse.RangeNode:
			if inRange {
				return errors.New("a prompt template may not range inside a range")
			}
			if ranges++; ranges > MaxPromptRanges {
				return fmt.Errorf("a prompt template may hold at most %d ranges", MaxPromptRanges)
			}
			if !rangesOverData(n.Pipe) {
				return fmt.Errorf("a prompt template ranges only over the case's fields, not %s", n.Pipe)
			}
			return walkBranch(&n.BranchNode, true, walk)
		}
		return nil
	}
	if err := walk(tpl.Tree.Root, false); err != nil {
		return nil, err
	}
	return tpl, nil
}

func walkBranch(b *parse.BranchNode, inRange bool, walk func(parse.Node, bool) error) error {
	if err := walk(b.List, inRange); err != nil {
		return err
	}
	return walk(b.ElseList, inRange)
}

// rangesOverData reports whether a range's pipeline is one field, variable
// or dot: a list or map of the case, never a number or a function's
// result.
func rangesOverData(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	switch p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode, *parse.VariableNode, *parse.DotNode:
		return true
	}
	return false
}

// cappedWriter keeps at most max bytes and fails the write that would
// pass them, which stops the template's execution there.
type cappedWriter struct {
	buf bytes.Buffer
	max int
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		return 0, errPromptTooLong
	}
	return w.buf.Write(p)
}

var errPromptTooLong = fmt.Errorf("the rendered prompt passes the limit of %d bytes", MaxPromptBytes)

// PromptError is a prompt template that cannot be rendered for a case:
// the treatment, the case and, when that is the problem, the key the case
// lacks. It is found when the suite is loaded, before anything is
// submitted.
type PromptError struct {
	Treatment string
	Case      string
	// Key is the missing key ("" when something else failed).
	Key string
	Err error
}

func (e *PromptError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("treatment %s: scaffold.prompt: case %s has no field %q (the template's keys are the case's fields: docs/case.md#scaffold)",
			e.Treatment, e.Case, e.Key)
	}
	return fmt.Sprintf("treatment %s: scaffold.prompt: on case %s: %v", e.Treatment, e.Case, e.Err)
}

// Unwrap returns the template's own error.
func (e *PromptError) Unwrap() error { return e.Err }

// Is makes a PromptError an invalid input (ErrInvalid).
func (e *PromptError) Is(target error) bool { return target == ErrInvalid }

// missingKey finds the key in text/template's error for a map without it.
var missingKey = regexp.MustCompile(`map has no entry for key "([^"]*)"`)

// SystemPrompt is the system message of a case run under a treatment:
// DefaultSystemPrompt, the treatment's prompt, or its template rendered
// over the case's fields. It is a pure function of the case and the
// treatment as stored, so a runner taking a run over renders the same
// bytes as the one that started it.
func SystemPrompt(c *Case, t *Treatment) (string, error) {
	if t == nil || t.Scaffold == nil || (t.Scaffold.Prompt == "" && t.Scaffold.PromptFile == "") {
		return DefaultSystemPrompt, nil
	}
	s := t.Scaffold
	if s.Prompt == "" {
		return "", &PromptError{Treatment: t.ID, Case: c.ID, Err: fmt.Errorf("prompt_file %s was never read (load the treatment with LoadTreatment)", s.PromptFile)}
	}
	if !s.Template {
		return s.Prompt, nil
	}
	tpl, err := parsePrompt(s.Prompt)
	if err != nil {
		return "", &PromptError{Treatment: t.ID, Case: c.ID, Err: err}
	}
	data, err := PromptData(c, t)
	if err != nil {
		return "", &PromptError{Treatment: t.ID, Case: c.ID, Err: err}
	}
	out := &cappedWriter{max: MaxPromptBytes}
	if err := tpl.Execute(out, data); err != nil {
		if errors.Is(err, errPromptTooLong) {
			return "", &PromptError{Treatment: t.ID, Case: c.ID, Err: errPromptTooLong}
		}
		pe := &PromptError{Treatment: t.ID, Case: c.ID, Err: err}
		if m := missingKey.FindStringSubmatch(err.Error()); m != nil {
			pe.Key = m[1]
		}
		return "", pe
	}
	if strings.TrimSpace(out.buf.String()) == "" {
		return "", &PromptError{Treatment: t.ID, Case: c.ID, Err: errors.New("the rendered prompt is empty")}
	}
	return out.buf.String(), nil
}

// PromptData is what a prompt template reads: the case's fields under
// their case-file keys (id, instruction, budget, checks, requirements,
// env, …), with tools the tools offered under the treatment. What
// publishing adds (the fixture's digest, an image's digest) is left out:
// the prompt is the same before the suite is published and after.
func PromptData(c *Case, t *Treatment) (map[string]any, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("the case's fields: %w", err)
	}
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // a whole number renders as written, never as 1e+06
	if err := dec.Decode(&data); err != nil {
		return nil, fmt.Errorf("the case's fields: %w", err)
	}
	delete(data, "fixture_digest")
	if env, ok := data["environment"].(map[string]any); ok {
		delete(env, "image_digest")
	}
	tools := make([]any, 0, len(c.Tools))
	for _, name := range OfferedTools(c, t) {
		tools = append(tools, name)
	}
	data["tools"] = tools
	return data, nil
}

// OfferedTools are the built-in tools a case offers under a treatment: the
// case's, in its order, narrowed to the treatment's scaffold tools when
// it names any, and delegate last where the treatment allows delegation
// (DelegationAllowed).
func OfferedTools(c *Case, t *Treatment) []string {
	var out []string
	for _, name := range c.Tools {
		if name == DelegateTool {
			continue // only the treatment offers it, below
		}
		if t == nil || t.Scaffold == nil || len(t.Scaffold.Tools) == 0 || slices.Contains(t.Scaffold.Tools, name) {
			out = append(out, name)
		}
	}
	if DelegationAllowed(c, t) {
		out = append(out, DelegateTool)
	}
	return out
}

// ToolDescriptions are the description overrides that apply to a case
// under a treatment: those of the tools it offers (nil: none).
func ToolDescriptions(c *Case, t *Treatment) map[string]string {
	if t == nil || t.Scaffold == nil {
		return nil
	}
	var out map[string]string
	for _, name := range OfferedTools(c, t) {
		if d, ok := t.Scaffold.ToolDescriptions[name]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = d
		}
	}
	return out
}

// CheckScaffold checks a treatment's scaffold against a case, as loading
// a suite does for every case and treatment: the prompt renders, and at
// least one tool is offered.
func CheckScaffold(c *Case, t *Treatment) error {
	if _, err := SystemPrompt(c, t); err != nil {
		return err
	}
	if len(OfferedTools(c, t)) == 0 {
		return &Error{Field: "scaffold.tools", Msg: fmt.Sprintf("treatment %s offers none of the tools case %s allows (%v)", t.ID, c.ID, c.Tools)}
	}
	return nil
}
