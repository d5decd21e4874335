// Package extensions admits tool servers outside the runner (MCP servers
// over stdio) as part of a run's authority. An extension runs only if the
// runner's allowlist pins it: its command, arguments, the sha256 digest of
// its executable and the capabilities it may offer, each tool with the
// effect class and approval rule the allowlist (never the server) gives it.
// Anything else is refused before its process starts. docs/extensions.md
// is the format and the rules.
package extensions

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/fileerr"
)

// Allowlist is the runner's list of the extensions it may start.
type Allowlist struct {
	// File is where it was read from (for errors).
	File       string  `yaml:"-"`
	Extensions []Entry `yaml:"extensions"`
}

// Entry pins one extension.
type Entry struct {
	// Name is what cases call it; its tools reach the model as
	// <name>__<tool>.
	Name string `yaml:"name"`
	// Command is the absolute path of the executable, and Args its
	// arguments: the whole command line, pinned.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args,omitempty"`
	// Digest is the sha256 digest of the executable file
	// ("sha256:<64 hex>"), checked right before every start.
	Digest events.Digest `yaml:"digest"`
	// Env adds variables to the minimal environment the server runs with.
	Env map[string]string `yaml:"env,omitempty"`
	// StartTimeout bounds starting the server and listing its tools
	// (default 30s).
	StartTimeout cases.Duration `yaml:"start_timeout,omitempty"`
	// Tools are the capabilities the extension may offer.
	Tools []Capability `yaml:"tools"`
}

// Capability is one tool an extension may offer, classified by the
// allowlist.
type Capability struct {
	// Name is the tool's name on the server.
	Name string `yaml:"name"`
	// Effect is the tool's effect class: read, write, external or
	// irreversible. The server's annotations (readOnlyHint and the like)
	// never change it.
	Effect events.EffectClass `yaml:"effect"`
	// Approval is "never" or "always". external and irreversible tools
	// always need a person's approval; it defaults to never otherwise.
	Approval string `yaml:"approval,omitempty"`
	// Timeout bounds one call (default 30s, at most 10m).
	Timeout cases.Duration `yaml:"timeout,omitempty"`
	// OutputCap bounds the observation the model reads, in bytes (default
	// 16 KiB, at most 1 MiB).
	OutputCap int `yaml:"output_cap,omitempty"`
}

// Defaults and bounds of an entry.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultTimeout      = 30 * time.Second
	MaxTimeout          = 10 * time.Minute
	DefaultOutputCap    = 16 << 10
	MaxOutputCap        = 1 << 20
	// Separator joins an extension's name and a tool's name into the name
	// the model calls.
	Separator = "__"
)

// toolName is what a provider accepts as a function name.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Error is a problem in an allowlist file: the file, the line (0 when not
// known), the field path and what is wrong.
type Error = fileerr.Error[allowlistFile]

// ErrInvalid matches every *Error with errors.Is.
var ErrInvalid = errors.New("invalid extension allowlist")

// allowlistFile makes Error the problem of an allowlist file.
type allowlistFile struct{}

func (allowlistFile) Invalid() error { return ErrInvalid }

// Load reads and checks an allowlist file.
func Load(path string) (*Allowlist, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("extension allowlist: %w", err)
	}
	return Parse(path, data)
}

// Parse reads allowlist YAML; name is used in errors. Unknown keys are
// refused so that a misspelt field is not silently ignored, and every
// error names the field and, where it can, the line.
func Parse(name string, data []byte) (*Allowlist, error) {
	var l Allowlist
	if err := yaml.UnmarshalWithOptions(data, &l, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		e := &Error{File: name, Msg: yaml.FormatError(err, false, false)}
		var ye yaml.Error
		if errors.As(err, &ye) {
			e.Msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				e.Line = tk.Position.Line
			}
		}
		return nil, e
	}
	l.File = name
	if err := l.normalise(); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.File = name
			e.Line = lineOf(data, e.Field)
		}
		return nil, err
	}
	return &l, nil
}

// lineOf finds the line of a field path (e.g. extensions[0].tools[1].effect)
// in the source; for a field that is missing, the line of the nearest
// enclosing one; 0 when there is none.
func lineOf(data []byte, field string) int {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return 0
	}
	for field != "" {
		if p, err := yaml.PathString("$." + field); err == nil {
			n, err := p.FilterFile(f)
			if err == nil && n != nil && n.GetToken() != nil && n.GetToken().Position != nil {
				return n.GetToken().Position.Line
			}
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			break
		}
		field = field[:i]
	}
	return 0
}

func fieldErr(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// normalise checks the allowlist and fills in defaults.
func (l *Allowlist) normalise() error {
	seen := map[string]bool{}
	for i := range l.Extensions {
		e := &l.Extensions[i]
		f := fmt.Sprintf("extensions[%d]", i)
		if err := events.ValidateToken("name", e.Name); err != nil {
			// The field's path names it: the check's own name for it
			// would name it twice.
			var fe *events.FieldError
			if errors.As(err, &fe) {
				return fieldErr(f+".name", "%s", fe.Reason)
			}
			return fieldErr(f+".name", "%v", err)
		}
		if bytes.Contains([]byte(e.Name), []byte(Separator)) {
			return fieldErr(f+".name", "%q holds %q, which separates extension and tool names", e.Name, Separator)
		}
		if seen[e.Name] {
			return fieldErr(f+".name", "extension %q is listed twice", e.Name)
		}
		seen[e.Name] = true
		if e.Command == "" {
			return fieldErr(f+".command", "required: the absolute path of the server's executable")
		}
		if !filepath.IsAbs(e.Command) || filepath.Clean(e.Command) != e.Command {
			return fieldErr(f+".command", "%q is not a clean absolute path: the digest pins one file, a PATH lookup could find another", e.Command)
		}
		if e.Digest == "" {
			return fieldErr(f+".digest", "required: sha256:<hex> of the executable (e.g. from sha256sum)")
		}
		if err := e.Digest.Validate("digest"); err != nil {
			return fieldErr(f+".digest", "%q is not sha256:<64 lowercase hex digits>", e.Digest)
		}
		for k := range e.Env {
			if k == "" || bytes.ContainsAny([]byte(k), "=\x00") {
				return fieldErr(f+".env", "bad variable name %q", k)
			}
		}
		if e.StartTimeout == 0 {
			e.StartTimeout = cases.Duration(DefaultStartTimeout)
		}
		if len(e.Tools) == 0 {
			return fieldErr(f+".tools", "list the tools the extension may offer; it offers nothing else")
		}
		tools := map[string]bool{}
		for j := range e.Tools {
			if err := e.Tools[j].normalise(fmt.Sprintf("%s.tools[%d]", f, j), e.Name, tools); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Capability) normalise(f, ext string, seen map[string]bool) error {
	if c.Name == "" {
		return fieldErr(f+".name", "required: the tool's name on the server")
	}
	if !toolName.MatchString(ext + Separator + c.Name) {
		return fieldErr(f+".name", "%q: the model calls it %s%s%s, which must be 1-64 of A-Z a-z 0-9 _ -", c.Name, ext, Separator, c.Name)
	}
	if seen[c.Name] {
		return fieldErr(f+".name", "tool %q is listed twice", c.Name)
	}
	seen[c.Name] = true
	switch c.Effect {
	case events.EffectRead, events.EffectWrite, events.EffectExternal, events.EffectIrreversible:
	case "":
		return fieldErr(f+".effect", "required: read, write, external or irreversible")
	default:
		return fieldErr(f+".effect", "unknown effect class %q (want read, write, external or irreversible)", c.Effect)
	}
	outside := c.Effect == events.EffectExternal || c.Effect == events.EffectIrreversible
	switch c.Approval {
	case "":
		c.Approval = events.ApprovalNever
		if outside {
			c.Approval = events.ApprovalAlways
		}
	case events.ApprovalAlways:
	case events.ApprovalNever:
		if outside {
			return fieldErr(f+".approval", "%s tools always need a person's approval; it cannot be never", c.Effect)
		}
	default:
		return fieldErr(f+".approval", "unknown approval rule %q (want never or always)", c.Approval)
	}
	switch {
	case c.Timeout == 0:
		c.Timeout = cases.Duration(DefaultTimeout)
	case c.Timeout.Std() > MaxTimeout:
		return fieldErr(f+".timeout", "%v is longer than the limit %v", c.Timeout.Std(), MaxTimeout)
	}
	switch {
	case c.OutputCap == 0:
		c.OutputCap = DefaultOutputCap
	case c.OutputCap < 0 || c.OutputCap > MaxOutputCap:
		return fieldErr(f+".output_cap", "%d is outside 1..%d bytes", c.OutputCap, MaxOutputCap)
	}
	return nil
}

// Lookup returns the entry of that name.
func (l *Allowlist) Lookup(name string) (Entry, bool) {
	if l == nil {
		return Entry{}, false
	}
	for _, e := range l.Extensions {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// capability returns the allowlisted capability of that tool name.
func (e Entry) capability(tool string) (Capability, bool) {
	for _, c := range e.Tools {
		if c.Name == tool {
			return c, true
		}
	}
	return Capability{}, false
}
