package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
)

// Registry holds the tools a run may call, with their compiled schemas.
type Registry struct {
	tools   map[string]Tool
	schemas map[string]*jsonschema.Schema
	order   []string
	// descriptions replace the descriptions of built-in tools, by name:
	// what the model is told, and so part of the contract.
	descriptions map[string]string
}

// Builtin returns every built-in tool. http_call is offered only to cases
// that name the endpoints it may reach.
func Builtin() []Tool {
	return []Tool{ReadFile{}, ListFiles{}, WriteFile{}, EditFile{}, RunCommand{}, TaskComplete{}, HTTPCall{}, Delegate{}}
}

// RegistryOption configures the built-in tools of a registry.
type RegistryOption func(*registryOptions) error

type registryOptions struct {
	httpTimeout  time.Duration
	descriptions map[string]string
}

// WithDescriptions replaces what the model is told built-in tools do, by
// tool name (a treatment's scaffold.tool_descriptions). Each must name a
// tool the registry offers, with a description that is not empty.
func WithDescriptions(d map[string]string) RegistryOption {
	return func(o *registryOptions) error {
		for name, desc := range d {
			if strings.TrimSpace(desc) == "" {
				return fmt.Errorf("the description of tool %q is empty", name)
			}
		}
		o.descriptions = d
		return nil
	}
}

// WithHTTPTimeout bounds each http_call (the case's http.timeout). It must
// be positive.
func WithHTTPTimeout(d time.Duration) RegistryOption {
	return func(o *registryOptions) error {
		if d <= 0 {
			return fmt.Errorf("http timeout %v: must be positive", d)
		}
		o.httpTimeout = d
		return nil
	}
}

// NewRegistry builds a registry of the named tools (all built-ins when
// names is empty).
func NewRegistry(names []string, opts ...RegistryOption) (*Registry, error) {
	var o registryOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	r := &Registry{tools: map[string]Tool{}, schemas: map[string]*jsonschema.Schema{}}
	for _, t := range Builtin() {
		if _, ok := t.(HTTPCall); ok && o.httpTimeout > 0 {
			t = HTTPCall{Timeout: o.httpTimeout}
		}
		c := t.Contract()
		if len(names) > 0 && !slices.Contains(names, c.Name) {
			continue
		}
		s, err := compileSchema(c.Name, c.Schema)
		if err != nil {
			return nil, err
		}
		r.tools[c.Name], r.schemas[c.Name] = t, s
		r.order = append(r.order, c.Name)
	}
	for _, n := range names {
		if _, ok := r.tools[n]; !ok {
			return nil, fmt.Errorf("unknown tool %q", n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(o.descriptions)) {
		if _, ok := r.tools[n]; !ok {
			return nil, fmt.Errorf("a description for tool %q, which is not offered", n)
		}
	}
	if len(o.descriptions) > 0 {
		r.descriptions = maps.Clone(o.descriptions)
	}
	return r, nil
}

// Add offers one more tool (an extension's), after the built-ins. Its
// schema is compiled now, so that its calls are checked like any other's.
func (r *Registry) Add(t Tool) error {
	c := t.Contract()
	if _, dup := r.tools[c.Name]; dup {
		return fmt.Errorf("tool %q is offered twice", c.Name)
	}
	if _, builtin := BuiltinByName(c.Name); builtin {
		return fmt.Errorf("tool %q would shadow a built-in tool", c.Name)
	}
	s, err := compileSchema(c.Name, c.Schema)
	if err != nil {
		return err
	}
	r.tools[c.Name], r.schemas[c.Name] = t, s
	r.order = append(r.order, c.Name)
	return nil
}

// Specs returns the tool schemas offered to the model, in a stable order.
func (r *Registry) Specs() []models.ToolSpec {
	out := make([]models.ToolSpec, 0, len(r.order))
	for _, n := range r.order {
		c := r.contract(n)
		out = append(out, models.ToolSpec{Name: c.Name, Description: c.Description, Parameters: c.Schema})
	}
	return out
}

// contract is an offered tool's contract as the model is told it: with
// its description replaced where the registry was given one.
func (r *Registry) contract(name string) Contract {
	c := r.tools[name].Contract()
	if d, ok := r.descriptions[name]; ok {
		c.Description = d
	}
	return c
}

// Lookup returns a tool by name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// CutShort adds to a refusal of arguments that are not JSON (r from
// Check) that the reply carrying them was cut at its output-token limit
// (finish "length"): the call is unfinished, not malformed, and sending
// the same again would be cut again. Nil, or any other refusal, is left
// as it is.
func (r *Result) CutShort(args string) {
	if r == nil || r.Err == nil || r.Err.Code != CodeBadArguments || json.Valid([]byte(args)) {
		return
	}
	r.Err.Message += "; the reply was cut at its output-token limit (finish length) while writing this call: " +
		"send less in one call (a large file in parts, with edit_file or several writes)"
}

// Check validates a call before anything runs: the tool must be offered and
// its arguments must be JSON satisfying the tool's schema. The error is a
// typed result for the model, never a crash.
func (r *Registry) Check(name, args string) (Tool, json.RawMessage, *Result) {
	t, ok := r.tools[name]
	if !ok {
		known := strings.Join(r.order, ", ")
		res := Fail(CodeUnknownTool, "no tool named %q; the tools are: %s", name, known)
		if name == "" {
			res = Fail(CodeUnknownTool, "the call names no tool; the tools are: %s", known)
		}
		return nil, nil, &res
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(args)))
	if err != nil {
		res := Fail(CodeBadArguments, "arguments are not valid JSON: %v", err)
		return nil, nil, &res
	}
	if err := r.schemas[name].Validate(v); err != nil {
		res := Fail(CodeBadArguments, "arguments do not match the %s schema: %s", name, schemaMessage(err))
		return nil, nil, &res
	}
	return t, json.RawMessage(args), nil
}

// schemaMessage flattens a validation error to one line the model can act on.
func schemaMessage(err error) string {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "\n", "; ")
	return strings.Join(strings.Fields(msg), " ")
}

// Run validates and executes one call with the tool's timeout, capping its
// output.
func (r *Registry) Run(ctx context.Context, env Env, t Tool, args json.RawMessage) Result {
	c := t.Contract()
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	res := t.Run(ctx, env, args)
	if !res.Truncated {
		// A tool that cut its own output already marked it.
		res.Output, res.Truncated = CapOutput(res.Output, c.OutputCap)
	}
	return res
}

// BuiltinByName returns the built-in tool of that name, if there is one.
func BuiltinByName(name string) (Tool, bool) {
	for _, t := range Builtin() {
		if t.Contract().Name == name {
			return t, true
		}
	}
	return nil, false
}

// Contracts is the canonical JSON of every tool the registry offers, in
// the order offered: name, description, argument schema, effect class,
// approval rule, timeout, output cap and idempotence. It is what the
// model is told and what the harness enforces, so it is part of the agent
// identity: a change of any contract makes another agent.
func (r *Registry) Contracts() (json.RawMessage, error) {
	type contract struct {
		Name        string             `json:"name"`
		Description string             `json:"description"`
		Schema      json.RawMessage    `json:"schema"`
		Effect      events.EffectClass `json:"effect"`
		Approval    Approval           `json:"approval"`
		TimeoutMS   int64              `json:"timeout_ms"`
		OutputCap   int                `json:"output_cap"`
		Idempotent  bool               `json:"idempotent"`
	}
	out := make([]contract, 0, len(r.order))
	for _, n := range r.order {
		c := r.contract(n)
		var schema bytes.Buffer
		if err := json.Compact(&schema, c.Schema); err != nil {
			return nil, fmt.Errorf("tool %s: schema: %w", n, err)
		}
		out = append(out, contract{Name: c.Name, Description: c.Description, Schema: schema.Bytes(), Effect: c.Effect,
			Approval: c.Approval, TimeoutMS: c.Timeout.Milliseconds(), OutputCap: c.OutputCap, Idempotent: c.Idempotent})
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("tool contracts: %w", err)
	}
	return data, nil
}
