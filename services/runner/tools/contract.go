// Package tools holds the runner's built-in tools and the contract every
// tool declares: a name, a JSON schema its arguments must satisfy before
// anything runs, an effect class, an approval rule, a timeout, an output cap
// and typed errors. The model sees tool results as JSON observations, never
// as free text it must interpret: {"ok":true,"output":...} or
// {"ok":false,"error":{"code":...,"message":...,"retryable":...}}.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
)

// Approval says whether a call needs a human's approval before it runs.
type Approval string

// Approval rules.
const (
	ApprovalNever  Approval = "never"
	ApprovalAlways Approval = "always"
)

// Contract is what a tool promises.
type Contract struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments.
	Schema json.RawMessage
	// Effect is what the tool may touch.
	Effect events.EffectClass
	// Approval says whether a human must approve each call.
	Approval Approval
	// Timeout bounds one call.
	Timeout time.Duration
	// OutputCap bounds the observation, in bytes; longer output is cut and
	// marked as cut.
	OutputCap int
	// Idempotent says a call may be repeated under the same operation ID
	// with the same effect (reads, and writes of whole contents).
	Idempotent bool
}

// Error codes tools and the dispatcher report.
const (
	CodeUnknownTool    = "UNKNOWN_TOOL"
	CodeNotAllowed     = "TOOL_NOT_ALLOWED"
	CodeBadArguments   = "BAD_ARGUMENTS"
	CodeDuplicateCall  = "DUPLICATE_CALL_ID"
	CodePathEscape     = "PATH_ESCAPE"
	CodeNotFound       = "NOT_FOUND"
	CodeIsDirectory    = "IS_DIRECTORY"
	CodeNotDirectory   = "NOT_DIRECTORY"
	CodeEditNoMatch    = "EDIT_NO_MATCH"
	CodeEditAmbiguous  = "EDIT_AMBIGUOUS"
	CodeTimeout        = "TIMEOUT"
	CodeCommandFailed  = "COMMAND_FAILED"
	CodeIO             = "IO_ERROR"
	CodeTooLarge       = "TOO_LARGE"
	CodeBudgetRefused  = "BUDGET_REFUSED"
	CodeApprovalNeeded = "APPROVAL_REQUIRED"
)

// Result is what one call produced.
type Result struct {
	// Output is the observation text for the model (capped).
	Output string
	// Truncated says Output was cut at the cap.
	Truncated bool
	// Err is a typed failure; nil on success.
	Err *events.ToolError
	// ExitCode is a command's exit status (commands only).
	ExitCode *int
	// Intent is the actor intent a task_complete call carries.
	Intent *events.ActorIntent
	// Outcome is what an external effect did, as far as the tool can tell
	// (events.OutcomeApplied, OutcomeNotApplied or OutcomeUnknown); empty
	// for tools whose effects stay in the workspace.
	Outcome string
}

// Fail returns a failed result.
func Fail(code, format string, args ...any) Result {
	return Result{Err: &events.ToolError{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// Observation renders a result as the JSON the model reads.
func (r Result) Observation() string {
	type errJSON struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	}
	obs := struct {
		OK        bool     `json:"ok"`
		Output    string   `json:"output,omitempty"`
		Truncated bool     `json:"truncated,omitempty"`
		ExitCode  *int     `json:"exit_code,omitempty"`
		Error     *errJSON `json:"error,omitempty"`
	}{OK: r.Err == nil, Output: r.Output, Truncated: r.Truncated, ExitCode: r.ExitCode}
	if r.Err != nil {
		obs.Error = &errJSON{Code: r.Err.Code, Message: r.Err.Message, Retryable: r.Err.Retryable}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(obs)
	return strings.TrimSuffix(buf.String(), "\n")
}

// Env is what a tool may use: the workspace and the process environment.
type Env struct {
	// Root resolves paths inside the workspace.
	Root Resolver
	// Environ is the minimal environment commands run with.
	Environ []string
	// Operation is the current call's operation ID (external effects send
	// it as their idempotency key).
	Operation string
	// AllowURL says whether http_call may reach a URL: nil when it may,
	// otherwise why not (nil func: nothing is allowed).
	AllowURL func(url string) error
	// Sandbox contains commands (nil: only their own session and the
	// minimal environment).
	Sandbox *sandbox.Sandbox
}

// Resolver maps a path a tool was given to an absolute path inside the
// workspace, after following symlinks, or refuses it before anything
// touches disk.
type Resolver interface {
	Root() string
	Resolve(rel string) (string, error)
}

// Prechecker is implemented by tools that can refuse a call from its
// arguments alone (a path outside the workspace) before the dispatch is
// even intended.
type Prechecker interface {
	Precheck(env Env, args json.RawMessage) *Result
}

// Tool is one built-in tool.
type Tool interface {
	Contract() Contract
	// Run executes a call whose arguments already satisfied the schema.
	Run(ctx context.Context, env Env, args json.RawMessage) Result
}

// compiled holds the schemas compiled in this process, by tool name and
// schema text: every attempt builds a registry, and compiling the
// built-in schemas cost each one ~5 ms and 6,000 allocations (6% of a
// runner's profile). A compiled schema is only read when it validates, so
// attempts running at once share it.
var compiled = struct {
	sync.Mutex
	m map[[2]string]*jsonschema.Schema
}{m: map[[2]string]*jsonschema.Schema{}}

// maxCompiled bounds compiled: past it (a process offered ever new
// extension schemas) a schema is compiled for its registry alone.
const maxCompiled = 1024

// compileSchema compiles a contract's schema, once per process.
func compileSchema(name string, schema json.RawMessage) (*jsonschema.Schema, error) {
	key := [2]string{name, string(schema)}
	compiled.Lock()
	s, ok := compiled.m[key]
	compiled.Unlock()
	if ok {
		return s, nil
	}
	s, err := compileNew(name, schema)
	if err != nil {
		return nil, err
	}
	compiled.Lock()
	defer compiled.Unlock()
	if kept, ok := compiled.m[key]; ok {
		return kept, nil // compiled at once by another attempt
	}
	if len(compiled.m) < maxCompiled {
		compiled.m[key] = s
	}
	return s, nil
}

// compileNew compiles a contract's schema with a compiler of its own.
func compileNew(name string, schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	url := "factline:tool/" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	s, err := c.Compile(url)
	var invalid *jsonschema.SchemaValidationError
	if errors.As(err, &invalid) {
		// The compiler's message is a tree over lines, starting with its
		// internal URL: the leaves are what is wrong.
		return nil, fmt.Errorf("tool %s: its inputSchema is not a valid JSON Schema: %s", name, schemaProblems(invalid))
	}
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	return s, nil
}

// schemaProblems is what a schema that fails the metaschema gets wrong,
// on one line: each innermost failure ("at '/required': got number, want
// array"), joined by "; ".
func schemaProblems(e *jsonschema.SchemaValidationError) string {
	var top *jsonschema.ValidationError
	if !errors.As(e.Err, &top) {
		return strings.Join(strings.Fields(e.Err.Error()), " ")
	}
	var leaves []string
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) > 0 {
			for _, c := range v.Causes {
				walk(c)
			}
			return
		}
		leaf := *v
		msg := leaf.Error()
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		leaves = append(leaves, strings.TrimPrefix(strings.TrimSpace(msg), "- "))
	}
	walk(top)
	return strings.Join(leaves, "; ")
}

// noLoader refuses every schema a tool's schema refers to outside itself.
// The compiler's default loader reads file:// references from the host's
// disk, and an extension's server writes its tools' schemas: the runner
// must read nothing a server names, as the model would then be shown it
// (a "const" quoted back in BAD_ARGUMENTS) and /dev/zero would never end.
// The metaschemas are the compiler's own and never reach a loader.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the schema refers to %s: factline loads no schema from outside a tool's own (use $defs and #/$defs/… references)", url)
}

// CapOutput cuts s to at most max bytes (on a rune boundary) and marks the
// cut in the text, so the model knows it is not seeing everything.
func CapOutput(s string, max int) (string, bool) {
	if max <= 0 || len(s) <= max {
		return s, false
	}
	return capKnown(s, max, int64(len(s))), true
}

// capKnown cuts s (a prefix of something total bytes long) to at most max
// bytes, on a rune boundary, marking how many bytes of the whole were not
// shown.
func capKnown(s string, max int, total int64) string {
	cut := min(max, len(s))
	for cut > 0 && cut < len(s) && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[output cut: %d more bytes not shown]", total-int64(cut))
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// The marks a cut output carries: CapOutput's (and a command's) at the
// end, and a command's that keeps its last bytes at the start.
var (
	cutMoreMark    = regexp.MustCompile(`\n\[output cut: (at least )?(\d+) more bytes not shown\]$`)
	cutEarlierMark = regexp.MustCompile(`^\[output cut: (\d+) earlier bytes not shown\]\n`)
)

// HoldBackAtCuts removes from a cut output the bytes next to its cut
// marks that end says (at the end of the text a "more bytes" mark
// follows) and start says (at the start of the text an "earlier bytes"
// mark precedes), and counts them in the mark. It is how text that must
// not be shown in part (a secret the cap cut in two) is kept from the
// model; an output without marks is returned as it is.
func HoldBackAtCuts(out string, end, start func(string) int) string {
	if m := cutMoreMark.FindStringSubmatchIndex(out); m != nil {
		text, dropped := out[:m[0]], out[m[4]:m[5]]
		atLeast := ""
		if m[2] >= 0 {
			atLeast = "at least "
		}
		if n := end(text); n > 0 {
			out = text[:len(text)-n] + fmt.Sprintf("\n[output cut: %s%d more bytes not shown]", atLeast, atoi(dropped)+int64(n))
		}
	}
	if m := cutEarlierMark.FindStringSubmatchIndex(out); m != nil {
		text, dropped := out[m[1]:], out[m[2]:m[3]]
		if n := start(text); n > 0 {
			out = fmt.Sprintf("[output cut: %d earlier bytes not shown]\n", atoi(dropped)+int64(n)) + text[n:]
		}
	}
	return out
}

// atoi reads a mark's count, digits only by its pattern.
func atoi(digits string) int64 {
	n, _ := strconv.ParseInt(digits, 10, 64)
	return n
}

// Tail is at most the last n bytes of s, starting on a character, for a
// message or log line that quotes how some output ends. Cut from its
// front, it may begin with the end of a secret the cut split, which
// redaction, looking for whole values, lets through: partialStart (a
// redactor's PartialStart) says how many bytes that is, and they are left
// out too.
func Tail(s string, n int, partialStart func(string) int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for k := 1; k < utf8.UTFMax && s != "" && !utf8.RuneStart(s[0]); k++ {
		s = s[1:]
	}
	return s[partialStart(s):]
}
