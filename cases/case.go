// Package cases reads and checks the files that describe work: a case (the
// task, its fixture, tools, budgets, checks, requirements and policies) and
// a treatment (the model and the settings a case is run under). docs/case.md
// is the format. A loaded case is resolved into a self-contained Spec that
// travels as a blob, so a runner on another machine needs nothing else.
package cases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/fileerr"
)

// Case is one task as written in a case file.
type Case struct {
	// ID names the case in a suite; a subject-safe token.
	ID string `yaml:"id" json:"id"`
	// Instruction is the task as the model first reads it.
	Instruction string `yaml:"instruction" json:"instruction"`
	// Fixture is the directory the workspace starts from, relative to the
	// case file. Optional: no fixture means an empty workspace.
	Fixture string `yaml:"fixture,omitempty" json:"-"`
	// FixtureDigest is the stored fixture's workspace digest, set when the
	// case is published.
	FixtureDigest events.Digest `yaml:"-" json:"fixture_digest,omitempty"`
	// Tools lists the tools the model may call (default: all built-in).
	Tools []string `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Budget holds the hard limits of one attempt.
	Budget Budget `yaml:"budget" json:"budget"`
	// Checks are the commands that verify the work.
	Checks []Check `yaml:"checks,omitempty" json:"checks,omitempty"`
	// Requirements are what done means; by default one per required check.
	Requirements []Requirement `yaml:"requirements,omitempty" json:"requirements,omitempty"`
	// RequiresWrite says whether done needs an applied change to the
	// workspace. False lets a truthful read-only answer finish done.
	RequiresWrite *bool `yaml:"requires_write,omitempty" json:"requires_write,omitempty"`
	// Context is the default context policy (a treatment may override it).
	Context ContextPolicy `yaml:"context,omitempty" json:"context"`
	// Stall holds the stall handler's thresholds for this case.
	Stall StallPolicy `yaml:"stall,omitempty" json:"stall"`
	// Env adds variables to the minimal environment commands run with.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Extensions names the extensions (tool servers) whose allowlisted
	// tools the model may call. The runner's allowlist, not the case, says
	// what each one is and what its tools may do (docs/extensions.md).
	Extensions []string `yaml:"extensions,omitempty" json:"extensions,omitempty"`
	// HTTP allows external effects through http_call (see HTTPPolicy).
	HTTP *HTTPPolicy `yaml:"http,omitempty" json:"http,omitempty"`
	// Grading lists the instruments graders run on the sealed candidate
	// (see Grading and docs/grading.md).
	Grading *Grading `yaml:"grading,omitempty" json:"grading,omitempty"`
	// Environment, when set, is the container image the case's commands
	// run in (it replaces the treatment's default); absent, commands run
	// as contained host processes.
	Environment *Environment `yaml:"environment,omitempty" json:"environment,omitempty"`
	// Parent is set only on a child run's case (ChildCase): the parent run
	// and delegate call it belongs to. No case file sets it.
	Parent *events.ParentRef `yaml:"-" json:"parent,omitempty"`
}

// Budget is an attempt's hard limits. Zero means no limit of that kind,
// except Steps, which defaults to 20 so that no attempt runs forever.
type Budget struct {
	Steps        uint32   `yaml:"steps,omitempty" json:"steps"`
	InputTokens  uint64   `yaml:"input_tokens,omitempty" json:"input_tokens,omitempty"`
	OutputTokens uint64   `yaml:"output_tokens,omitempty" json:"output_tokens,omitempty"`
	Wall         Duration `yaml:"wall,omitempty" json:"wall,omitempty"`
	Cost         uint64   `yaml:"cost,omitempty" json:"cost,omitempty"`
}

// DefaultSteps bounds an attempt whose case sets no step limit.
const DefaultSteps = 20

// Check is a declared verification command.
type Check struct {
	ID      string   `yaml:"id" json:"id"`
	Command string   `yaml:"command" json:"command"`
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Required checks must pass at the current workspace for done.
	Required *bool `yaml:"required,omitempty" json:"required,omitempty"`
	// Diagnostics says how to read errors out of the check's output.
	Diagnostics *DiagnosticRule `yaml:"diagnostics,omitempty" json:"diagnostics,omitempty"`
}

// IsRequired reports whether the check is required (the default).
func (c Check) IsRequired() bool { return c.Required == nil || *c.Required }

// DiagnosticRule extracts diagnostics from a check's output: one per line
// the pattern matches, with the named groups file, line, code and message.
type DiagnosticRule struct {
	Pattern string `yaml:"pattern" json:"pattern"`
	// Complete says the pattern finds every error the check reports (not,
	// say, the first ten), so a shrinking set proves progress.
	Complete bool `yaml:"complete,omitempty" json:"complete,omitempty"`
}

// Requirement is one thing done must show.
type Requirement struct {
	ID          string `yaml:"id" json:"id"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Check is the declared check that proves it; empty means the stop
	// decider accepts cited evidence for it.
	Check string `yaml:"check,omitempty" json:"check,omitempty"`
}

// ContextPolicy says how the model-visible context is built.
type ContextPolicy struct {
	// Mode is "full" (everything, the default), "window" or "summarise".
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// WindowTurns is how many recent turns a window keeps (default 6).
	WindowTurns int `yaml:"window_turns,omitempty" json:"window_turns,omitempty"`
	// MaxTokens bounds the context (estimated); 0 means no bound.
	MaxTokens int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	// KeepTools lists tools whose observations a window always keeps.
	KeepTools []string `yaml:"keep_tools,omitempty" json:"keep_tools,omitempty"`
	// Summarise is the summarise mode's condenser (required by it, refused
	// by the other modes).
	Summarise *Summarise `yaml:"summarise,omitempty" json:"summarise,omitempty"`
}

// Summarise is a condenser: when its trigger fires before a turn, the
// turns between the first KeepFirst and the last KeepLast are replaced by
// a summary a model writes (a recorded call, charged to the run).
type Summarise struct {
	// Model is the model name the summary is asked of, at the treatment's
	// provider; empty: the treatment's model.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// TriggerTokens fires the condenser when the context would be larger
	// (estimated tokens); 0: no token trigger.
	TriggerTokens int `yaml:"trigger_tokens,omitempty" json:"trigger_tokens,omitempty"`
	// TriggerTurns fires it when more turns than this are not summarised
	// (past the first KeepFirst); 0: no turn trigger.
	TriggerTurns int `yaml:"trigger_turns,omitempty" json:"trigger_turns,omitempty"`
	// KeepFirst is how many of the first turns stay verbatim.
	KeepFirst int `yaml:"keep_first,omitempty" json:"keep_first,omitempty"`
	// KeepLast is how many of the latest turns stay verbatim (default 2).
	KeepLast int `yaml:"keep_last,omitempty" json:"keep_last,omitempty"`
	// Prompt is the summariser's instruction; empty: DefaultSummarisePrompt.
	Prompt string `yaml:"prompt,omitempty" json:"prompt,omitempty"`
}

// DefaultSummarisePrompt is the summariser's instruction when the policy
// gives none.
const DefaultSummarisePrompt = "Summarise the agent's work below for the agent itself, who will see your summary instead of these turns. " +
	"Keep every fact it may still need: file names, values, errors, evidence references ([evidence ...]) and what was decided. Be brief."

// Context modes.
const (
	ContextFull      = "full"
	ContextWindow    = "window"
	ContextSummarise = "summarise"
)

// wellFormedDuration is a duration as time.ParseDuration writes one,
// whatever its size: a failure to parse one is an overflow.
var wellFormedDuration = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// Duration is a time.Duration written as "90s", "5m".
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		if wellFormedDuration.Match(b) {
			// time.ParseDuration says "invalid" of one that overflows too.
			return fmt.Errorf("duration %q is too long (at most %s)", b, time.Duration(math.MaxInt64).Truncate(time.Hour))
		}
		return fmt.Errorf("duration %q: use a number with a unit, e.g. 90s or 5m", b)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Std returns the time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Error is a problem in a case or treatment file, located as precisely as
// the parser allows: "<file>[:<line>][: <field>]: <message>".
type Error = fileerr.Error[caseFile]

// ErrInvalid matches every *Error with errors.Is.
var ErrInvalid = errors.New("invalid case")

// caseFile makes Error the problem of a case or treatment file.
type caseFile struct{}

func (caseFile) Invalid() error { return ErrInvalid }

// BuiltinTools are the tools a case may list; a case that lists none gets
// them all.
// delegate is among them for the registry's sake, but no case lists it: a
// treatment offers it (Delegation).
var BuiltinTools = []string{"read_file", "list_files", "write_file", "edit_file", "run_command", "task_complete", "http_call", DelegateTool}

// ParseCase parses case YAML; name is used in errors. Unknown keys are
// refused so that a misspelt field is not silently ignored.
func ParseCase(name string, data []byte) (*Case, error) {
	var c Case
	if err := DecodeYAML(name, data, &c); err != nil {
		return nil, err
	}
	if c.Tools != nil && len(c.Tools) == 0 {
		// Written out empty it reads "no tools"; taking it for the default
		// (every built-in tool) would offer what its author withheld. Only
		// a case file is refused: a delegated child's granted list is the
		// runner's, not an author's.
		return nil, &Error{File: name, Line: fieldLine(data, "tools"), Field: "tools",
			Msg: "an empty list offers no tool, not even task_complete; leave tools out for every built-in tool, or list the ones to offer"}
	}
	if err := c.normalise(); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = name
			if ce.Line == 0 {
				ce.Line = fieldLine(data, ce.Field)
			}
		}
		return nil, err
	}
	return &c, nil
}

func fieldErr(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// tokenErr is the error of a field whose subject token err refuses. The
// token check names the token its own way ("id: empty subject token"),
// which the field's path already says: only its reason is kept.
func tokenErr(field string, err error) error {
	var fe *events.FieldError
	if errors.As(err, &fe) {
		return fieldErr(field, "%s", fe.Reason)
	}
	return fieldErr(field, "%v", err)
}

// normalise checks the case and fills in defaults.
func (c *Case) normalise() error {
	if err := events.ValidateToken("id", c.ID); err != nil {
		return tokenErr("id", err)
	}
	if c.Instruction == "" {
		return fieldErr("instruction", "required: the task as the model should read it")
	}
	if strings.TrimSpace(c.Instruction) == "" {
		// The model would be sent no task, and run on nothing.
		return fieldErr("instruction", "only whitespace: the task as the model should read it is required")
	}
	if len(c.Instruction) > MaxInstruction {
		return fieldErr("instruction", "%d bytes; the limit is %d", len(c.Instruction), MaxInstruction)
	}
	if len(c.Tools) == 0 {
		// http_call reaches outside the workspace: only a case that allows
		// endpoints offers it.
		for _, t := range BuiltinTools {
			if t == DelegateTool {
				continue
			}
			if t != "http_call" || c.HTTP != nil {
				c.Tools = append(c.Tools, t)
			}
		}
	}
	if slices.Contains(c.Tools, "http_call") && c.HTTP == nil {
		return fieldErr("tools", "http_call needs an http section naming the endpoints it may reach")
	}
	if err := c.HTTP.check("http"); err != nil {
		return err
	}
	for i, t := range c.Tools {
		if t == DelegateTool {
			return fieldErr(fmt.Sprintf("tools[%d]", i), "a case does not list delegate: a treatment offers it (delegation: {allowed: true})")
		}
		if !slices.Contains(BuiltinTools, t) {
			return fieldErr(fmt.Sprintf("tools[%d]", i), "unknown tool %q (known: %v)", t, BuiltinTools)
		}
	}
	if err := checkExtensions("extensions", c.Extensions); err != nil {
		return err
	}
	if c.Budget.Steps == 0 {
		c.Budget.Steps = DefaultSteps
	}
	checks := map[string]bool{}
	for i := range c.Checks {
		ch := &c.Checks[i]
		f := fmt.Sprintf("checks[%d]", i)
		if err := events.ValidateToken("id", ch.ID); err != nil {
			return tokenErr(f+".id", err)
		}
		if checks[ch.ID] {
			return fieldErr(f+".id", "duplicate check id %q", ch.ID)
		}
		checks[ch.ID] = true
		if ch.Command == "" {
			return fieldErr(f+".command", "required")
		}
		if ch.Timeout == 0 {
			ch.Timeout = Duration(5 * time.Minute)
		}
		if d := ch.Diagnostics; d != nil {
			re, err := regexp.Compile(d.Pattern)
			if err != nil {
				return fieldErr(f+".diagnostics.pattern", "%v", err)
			}
			if re.SubexpIndex("message") < 0 {
				return fieldErr(f+".diagnostics.pattern", "needs a named group (?P<message>...)")
			}
		}
	}
	if len(c.Requirements) == 0 {
		for _, ch := range c.Checks {
			if ch.IsRequired() {
				c.Requirements = append(c.Requirements, Requirement{ID: ch.ID, Check: ch.ID})
			}
		}
	}
	reqs := map[string]bool{}
	for i, r := range c.Requirements {
		f := fmt.Sprintf("requirements[%d]", i)
		if err := events.ValidateToken("id", r.ID); err != nil {
			return tokenErr(f+".id", err)
		}
		if reqs[r.ID] {
			return fieldErr(f+".id", "duplicate requirement id %q", r.ID)
		}
		reqs[r.ID] = true
		if r.Check != "" && !checks[r.Check] {
			return fieldErr(f+".check", "no check with id %q", r.Check)
		}
	}
	if err := c.Grading.normalise("grading", c); err != nil {
		return err
	}
	if err := c.Context.normalise("context"); err != nil {
		return err
	}
	if err := c.Environment.normalise("environment"); err != nil {
		return err
	}
	for k := range c.Env {
		if k == "" || bytes.ContainsAny([]byte(k), "=\x00") {
			return fieldErr("env", "bad variable name %q", k)
		}
	}
	return c.Stall.check("stall")
}

func (p *ContextPolicy) normalise(field string) error {
	switch p.Mode {
	case "":
		p.Mode = ContextFull
	case ContextFull, ContextWindow, ContextSummarise:
	default:
		return fieldErr(field+".mode", "unknown mode %q (want %q, %q or %q)", p.Mode, ContextFull, ContextWindow, ContextSummarise)
	}
	if p.WindowTurns < 0 || p.MaxTokens < 0 {
		return fieldErr(field, "window_turns and max_tokens cannot be negative")
	}
	if p.Mode == ContextWindow && p.WindowTurns == 0 {
		p.WindowTurns = 6
	}
	if p.Mode != ContextSummarise {
		if p.Summarise != nil {
			return fieldErr(field+".summarise", "only mode %q summarises (mode is %q)", ContextSummarise, p.Mode)
		}
		return nil
	}
	s := p.Summarise
	switch {
	case s == nil:
		return fieldErr(field+".summarise", "mode %q needs a summarise policy (trigger_tokens or trigger_turns, keep_first, keep_last)", ContextSummarise)
	case s.TriggerTokens < 0 || s.TriggerTurns < 0 || s.KeepFirst < 0 || s.KeepLast < 0:
		return fieldErr(field+".summarise", "trigger_tokens, trigger_turns, keep_first and keep_last cannot be negative")
	case s.TriggerTokens == 0 && s.TriggerTurns == 0 && p.MaxTokens == 0:
		return fieldErr(field+".summarise", "no trigger: set trigger_tokens, trigger_turns or the policy's max_tokens")
	}
	if s.KeepLast == 0 {
		s.KeepLast = 2
	}
	if s.Prompt == "" {
		s.Prompt = DefaultSummarisePrompt
	}
	return nil
}

// RequiresWriteOrDefault says whether done needs an applied change to the
// workspace. The default is no: passing the required checks (or, with none,
// cited evidence) is what done needs.
func (c *Case) RequiresWriteOrDefault() bool {
	if c.RequiresWrite != nil {
		return *c.RequiresWrite
	}
	return false
}

// Check returns the declared check with the given ID.
func (c *Case) Check(id string) (Check, bool) {
	for _, ch := range c.Checks {
		if ch.ID == id {
			return ch, true
		}
	}
	return Check{}, false
}

// Encode returns the canonical JSON of a resolved case: what is stored as a
// blob and named by the case digest in run.requested.
func (c *Case) Encode() ([]byte, error) { return json.Marshal(c) }

// DecodeCase reads a case from its stored JSON and checks it again.
func DecodeCase(data []byte) (*Case, error) {
	var c Case
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("stored case: %w", err)
	}
	if err := c.normalise(); err != nil {
		return nil, fmt.Errorf("stored case: %w", err)
	}
	return &c, nil
}
