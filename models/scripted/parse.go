package scripted

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/factline/factline/models"
)

// ParseError is a script that does not parse or validate. It names the file,
// the position, the turn and call (1-based, when it is inside one) and the
// field.
type ParseError struct {
	File   string // the name given to Parse (the path, for Load)
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Turn   int    // 1-based; 0 when the error is not inside a turn
	Branch int    // 1-based; 0 when the error is not inside a branch of the turn
	Call   int    // 1-based; 0 when the error is not inside a call
	Field  string // the key at fault; "" when the error is about no one key
	Msg    string // what is wrong
}

// Error formats the error as "file:line:col: turn T, branch B, call C:
// field: msg", leaving out the parts that are unknown.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Turn > 0 {
		fmt.Fprintf(&b, "turn %d", e.Turn)
		if e.Branch > 0 {
			fmt.Fprintf(&b, ", branch %d", e.Branch)
		}
		if e.Call > 0 {
			fmt.Fprintf(&b, ", call %d", e.Call)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads and parses the script at path; errors name path.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: load script: %w", err)
	}
	return Parse(path, data)
}

// scriptErrorKinds are the error kinds a script may ask for.
var scriptErrorKinds = []models.ErrorKind{
	models.ErrRateLimited, models.ErrUnavailable, models.ErrTimeout,
	models.ErrRefused, models.ErrBadResponse, models.ErrBadRequest,
}

// finishes are the finish reasons a script may give.
var finishes = []string{models.FinishStop, models.FinishToolCalls, models.FinishLength, models.FinishRefusal}

// Known keys, for unknown-field messages.
var (
	scriptKeys = "model, turns"
	turnKeys   = "text, calls, usage, reserve, finish, error, retry_after, delay, branches"
	branchKeys = "request_contains, text, calls, usage, reserve, finish, error, retry_after, delay"
	callKeys   = "id, name, args, args_raw"
	usageKeys  = "input_tokens, output_tokens, cost"
)

// rawScript, rawTurn, rawCall and rawUsage are what strict decoding yields;
// nested parts stay nodes so that their errors keep their positions.
type rawScript struct {
	Model *string  `yaml:"model"`
	Turns ast.Node `yaml:"turns"`
}

type rawTurn struct {
	Text       *string  `yaml:"text"`
	Calls      ast.Node `yaml:"calls"`
	Usage      ast.Node `yaml:"usage"`
	Reserve    *uint64  `yaml:"reserve"`
	Finish     *string  `yaml:"finish"`
	Error      *string  `yaml:"error"`
	RetryAfter *string  `yaml:"retry_after"`
	Delay      *string  `yaml:"delay"`
	// Cost is decoded only to say where a cost belongs (usage.cost).
	Cost ast.Node `yaml:"cost"`
	// Branches are a turn's alternative replies; RequestContains is what
	// selects a branch. Each is refused where it does not belong.
	Branches        ast.Node `yaml:"branches"`
	RequestContains *string  `yaml:"request_contains"`
}

type rawCall struct {
	ID      *string  `yaml:"id"`
	Name    *string  `yaml:"name"`
	Args    ast.Node `yaml:"args"`
	ArgsRaw *string  `yaml:"args_raw"`
}

type rawUsage struct {
	InputTokens  *uint64 `yaml:"input_tokens"`
	OutputTokens *uint64 `yaml:"output_tokens"`
	Cost         *uint64 `yaml:"cost"`
}

// goFields maps the Go field names of the raw types to their YAML keys, so
// that type errors name the key the author wrote.
var goFields = map[string]string{
	"Model": "model", "Turns": "turns", "Text": "text", "Calls": "calls",
	"Usage": "usage", "Reserve": "reserve", "Finish": "finish", "Error": "error",
	"RetryAfter": "retry_after", "Delay": "delay", "Cost": "cost", "ID": "id",
	"Name": "name", "Args": "args", "ArgsRaw": "args_raw",
	"InputTokens": "input_tokens", "OutputTokens": "output_tokens",
	"Branches": "branches", "RequestContains": "request_contains",
}

// scriptParser holds the state of one Parse.
type scriptParser struct {
	file string
}

// where locates an error inside the script.
type where struct {
	turn, branch, call int
}

// Parse parses and validates a script; name is used in errors (usually the
// file path). Errors are *ParseError values naming the file, line, column,
// turn, call and field. Unknown keys are refused.
func Parse(name string, data []byte) (m *Model, err error) {
	p := &scriptParser{file: name}
	// The YAML library is third-party code fed arbitrary input; a panic in
	// it must not take the caller down, so it becomes a parse error.
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, &ParseError{File: name, Msg: fmt.Sprintf("the YAML decoder failed: %v", r)}
		}
	}()
	return p.parse(data)
}

func (p *scriptParser) parse(data []byte) (*Model, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, p.yamlError(where{}, nil, err, scriptKeys)
	}
	var body ast.Node
	for i, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			return nil, p.errAt(where{}, f.Docs[i].Body, "", "a script is one YAML document")
		}
		body = doc.Body
	}
	if body == nil {
		return nil, &ParseError{File: p.file, Field: "turns", Msg: "the script is empty: it needs turns"}
	}
	if !isMapping(body) {
		return nil, p.errAt(where{}, body, "", "a script is a mapping with model and turns")
	}
	var raw rawScript
	if err := yaml.NodeToValue(body, &raw, yaml.Strict()); err != nil {
		return nil, p.yamlError(where{}, body, err, scriptKeys)
	}
	m := &Model{name: DefaultName}
	if raw.Model != nil {
		if *raw.Model == "" {
			return nil, p.errAt(where{}, valueOf(body, "model"), "model", "empty name (leave model out for the default)")
		}
		m.name = *raw.Model
	}
	// An empty list is a script with nothing to say: a run on it ends with
	// its observations exhausted before the first call, as a replay of an
	// empty script should.
	seq, ok := raw.Turns.(*ast.SequenceNode)
	if !ok {
		at := valueOf(body, "turns")
		if at == nil {
			at = body
		}
		return nil, p.errAt(where{}, at, "turns", "a script needs a list of turns (turns: [] for none)")
	}
	for i, node := range seq.Values {
		w := where{turn: i + 1}
		if !isMapping(node) {
			return nil, p.errAt(w, entryNode(seq, i), "", "a turn is a mapping (write {} for an empty reply)")
		}
		t, err := p.parseTurn(w, node)
		if err != nil {
			return nil, err
		}
		m.turns = append(m.turns, t)
	}
	return m, nil
}

func (p *scriptParser) parseTurn(w where, node ast.Node) (turn, error) {
	keys := turnKeys
	if w.branch > 0 {
		keys = branchKeys
	}
	var raw rawTurn
	if err := yaml.NodeToValue(node, &raw, yaml.Strict()); err != nil {
		return turn{}, p.yamlError(w, node, err, keys)
	}
	if w.branch == 0 {
		if at := valueOf(node, "request_contains"); at != nil {
			return turn{}, p.errAt(w, at, "request_contains", "only a branch has request_contains (see branches)")
		}
	} else if err := p.checkBranch(w, node, raw); err != nil {
		return turn{}, err
	}
	t, err := p.parseReply(w, node, raw)
	if err != nil {
		return turn{}, err
	}
	if w.branch > 0 {
		t.when = *raw.RequestContains
	}
	if w.branch == 0 && raw.Branches != nil {
		if t.branches, err = p.parseBranches(w, raw.Branches); err != nil {
			return turn{}, err
		}
	}
	return t, nil
}

// checkBranch checks what only a branch has: the text that selects it,
// and no branches of its own.
func (p *scriptParser) checkBranch(w where, node ast.Node, raw rawTurn) error {
	if at := valueOf(node, "branches"); at != nil {
		return p.errAt(w, at, "branches", "a branch has no branches of its own: list the alternatives on the turn")
	}
	if raw.RequestContains == nil {
		return p.errAt(w, node, "request_contains", "a branch needs request_contains: the text whose presence in the request selects it")
	}
	if *raw.RequestContains == "" {
		return p.errAt(w, valueOf(node, "request_contains"), "request_contains", "empty text matches every request: give the text that selects the branch")
	}
	return nil
}

// parseBranches parses a turn's alternative replies, in order.
func (p *scriptParser) parseBranches(w where, node ast.Node) ([]turn, error) {
	if _, null := node.(*ast.NullNode); null {
		return nil, nil
	}
	seq, ok := node.(*ast.SequenceNode)
	if !ok {
		return nil, p.errAt(w, node, "branches", "want a list of branches, each a mapping with request_contains and a reply")
	}
	out := make([]turn, 0, len(seq.Values))
	for i, bn := range seq.Values {
		bw := where{turn: w.turn, branch: i + 1}
		if !isMapping(bn) {
			return nil, p.errAt(bw, entryNode(seq, i), "", "a branch is a mapping with request_contains and the reply it gives")
		}
		t, err := p.parseTurn(bw, bn)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// parseReply parses the reply a turn or a branch gives.
func (p *scriptParser) parseReply(w where, node ast.Node, raw rawTurn) (turn, error) {
	var t turn
	if at := valueOf(node, "cost"); at != nil {
		return turn{}, p.errAt(w, at, "cost",
			"a cost goes inside usage (usage.cost): a cost without token counts would report unknown tokens as known")
	}
	if raw.Reserve != nil {
		t.reserve = *raw.Reserve
	}
	if raw.Delay != nil {
		d, err := p.duration(w, node, "delay", *raw.Delay)
		if err != nil {
			return turn{}, err
		}
		t.delay = d
	}
	if raw.Error != nil {
		kind := models.ErrorKind(*raw.Error)
		if !contains(scriptErrorKinds, kind) {
			return turn{}, p.errAt(w, valueOf(node, "error"), "error",
				fmt.Sprintf("unknown error kind %q (want one of %s)", *raw.Error, join(scriptErrorKinds)))
		}
		for _, key := range []string{"text", "calls", "usage", "finish"} {
			if v := valueOf(node, key); v != nil {
				return turn{}, p.errAt(w, v, key, "an error turn returns no reply: leave "+key+" out")
			}
		}
		t.errKind = kind
		if raw.RetryAfter != nil {
			d, err := p.duration(w, node, "retry_after", *raw.RetryAfter)
			if err != nil {
				return turn{}, err
			}
			t.retryAfter = d
		}
		return t, nil
	}
	if at := valueOf(node, "retry_after"); at != nil {
		return turn{}, p.errAt(w, at, "retry_after", "only an error turn has a retry_after")
	}
	if raw.Text != nil {
		t.text = *raw.Text
	}
	if raw.Calls != nil {
		calls, err := p.parseCalls(w, raw.Calls)
		if err != nil {
			return turn{}, err
		}
		t.calls = calls
	}
	if _, null := raw.Usage.(*ast.NullNode); raw.Usage != nil && !null {
		u, err := p.parseUsage(w, raw.Usage)
		if err != nil {
			return turn{}, err
		}
		t.usage = u
	}
	t.finish = models.FinishStop
	if len(t.calls) > 0 {
		t.finish = models.FinishToolCalls
	}
	if raw.Finish != nil {
		if !contains(finishes, *raw.Finish) {
			return turn{}, p.errAt(w, valueOf(node, "finish"), "finish",
				fmt.Sprintf("unknown finish %q (want one of %s)", *raw.Finish, join(finishes)))
		}
		t.finish = *raw.Finish
	}
	return t, nil
}

func (p *scriptParser) parseCalls(w where, callsNode ast.Node) ([]models.ToolCall, error) {
	seq, ok := callsNode.(*ast.SequenceNode)
	if !ok {
		if _, null := callsNode.(*ast.NullNode); null {
			return nil, nil
		}
		return nil, p.errAt(w, callsNode, "calls", "want a list of calls")
	}
	calls := make([]models.ToolCall, 0, len(seq.Values))
	ids := make(map[string]int, len(seq.Values))
	explicit := make(map[string]bool, len(seq.Values))
	for i, node := range seq.Values {
		cw := where{turn: w.turn, branch: w.branch, call: i + 1}
		if !isMapping(node) {
			return nil, p.errAt(cw, entryNode(seq, i), "", "a call is a mapping with a name")
		}
		var raw rawCall
		if err := yaml.NodeToValue(node, &raw, yaml.Strict()); err != nil {
			return nil, p.yamlError(cw, node, err, callKeys)
		}
		if raw.Name == nil || *raw.Name == "" {
			at := valueOf(node, "name")
			if at == nil {
				at = node
			}
			return nil, p.errAt(cw, at, "name", "a call needs a name")
		}
		c := models.ToolCall{ID: fmt.Sprintf("call-%d-%d", w.turn, i+1), Name: *raw.Name, Args: "{}"}
		if raw.ID != nil {
			if *raw.ID == "" {
				return nil, p.errAt(cw, valueOf(node, "id"), "id", "empty id (leave id out for the default)")
			}
			c.ID = *raw.ID
		}
		// Two calls may share an id only when the script says so for both:
		// that simulates a model sending duplicate call ids, which the
		// runner must answer with a typed error. A default id that clashes
		// is a mistake in the script.
		if prev, dup := ids[c.ID]; dup && !(raw.ID != nil && explicit[c.ID]) {
			at := valueOf(node, "id")
			if at == nil {
				at = node
			}
			return nil, p.errAt(cw, at, "id", fmt.Sprintf("id %q is already used by call %d of this turn", c.ID, prev))
		}
		if _, seen := ids[c.ID]; !seen {
			ids[c.ID] = i + 1
		}
		if raw.ID != nil {
			explicit[c.ID] = true
		}
		argsNode := valueOf(node, "args")
		switch {
		case argsNode != nil && raw.ArgsRaw != nil:
			return nil, p.errAt(cw, argsNode, "args", "give args or args_raw, not both")
		case raw.ArgsRaw != nil:
			c.Args = *raw.ArgsRaw
		case argsNode != nil:
			args, err := p.argsJSON(cw, argsNode)
			if err != nil {
				return nil, err
			}
			c.Args = args
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// argsJSON converts an args mapping to compact JSON with sorted keys.
func (p *scriptParser) argsJSON(w where, node ast.Node) (string, error) {
	if !isMapping(node) {
		return "", p.errAt(w, node, "args", "want a mapping (use args_raw for any other text)")
	}
	var v any
	if err := yaml.NodeToValue(node, &v); err != nil {
		return "", p.yamlError(w, node, err, callKeys)
	}
	if _, ok := v.(map[string]any); !ok {
		return "", p.errAt(w, node, "args", "want a mapping (use args_raw for any other text)")
	}
	out, err := compactJSON(v)
	if err != nil {
		return "", p.errAt(w, node, "args", fmt.Sprintf("not representable as JSON: %v", err))
	}
	return string(out), nil
}

func (p *scriptParser) parseUsage(w where, node ast.Node) (*models.Usage, error) {
	if !isMapping(node) {
		return nil, p.errAt(w, node, "usage", "want a mapping with input_tokens and output_tokens")
	}
	var raw rawUsage
	if err := yaml.NodeToValue(node, &raw, yaml.Strict()); err != nil {
		return nil, p.yamlError(w, node, err, usageKeys)
	}
	if raw.InputTokens == nil || raw.OutputTokens == nil {
		return nil, p.errAt(w, node, "usage",
			"give both input_tokens and output_tokens (leave usage out for unknown usage)")
	}
	u := &models.Usage{InputTokens: *raw.InputTokens, OutputTokens: *raw.OutputTokens}
	if raw.Cost != nil {
		c := *raw.Cost
		u.Cost = &c
	}
	return u, nil
}

func (p *scriptParser) duration(w where, node ast.Node, key, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, p.errAt(w, valueOf(node, key), key, fmt.Sprintf("want a duration such as 250ms or 2s, got %q", s))
	}
	if d < 0 {
		return 0, p.errAt(w, valueOf(node, key), key, fmt.Sprintf("negative duration %s", s))
	}
	return d, nil
}

// errAt builds a ParseError at node's position (unknown when node is nil).
func (p *scriptParser) errAt(w where, node ast.Node, field, msg string) *ParseError {
	e := &ParseError{File: p.file, Turn: w.turn, Branch: w.branch, Call: w.call, Field: field, Msg: msg}
	e.Line, e.Column = position(node)
	return e
}

// position returns where node starts: a block mapping starts at its first
// key, a flow mapping at its brace.
func position(node ast.Node) (line, col int) {
	switch n := node.(type) {
	case nil:
		return 0, 0
	case *ast.MappingNode:
		if !n.IsFlowStyle && len(n.Values) > 0 && n.Values[0] != nil {
			return position(n.Values[0])
		}
	case *ast.MappingValueNode:
		if !n.IsFlowStyle && n.Key != nil {
			return position(n.Key)
		}
	}
	if tk := node.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line, tk.Position.Column
	}
	return 0, 0
}

// keyOf returns the key of the entry of mapping node whose value is at
// the position of tk, "" when there is none.
func keyOf(node ast.Node, tk *token.Token) string {
	if tk == nil || tk.Position == nil {
		return ""
	}
	var values []*ast.MappingValueNode
	switch n := node.(type) {
	case *ast.MappingNode:
		values = n.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{n}
	}
	for _, mv := range values {
		if mv == nil || mv.Key == nil || mv.Value == nil {
			continue
		}
		if vt := mv.Value.GetToken(); vt != nil && vt.Position != nil &&
			vt.Position.Line == tk.Position.Line && vt.Position.Column == tk.Position.Column {
			if kt := mv.Key.GetToken(); kt != nil {
				return kt.Value
			}
		}
	}
	return ""
}

// yamlError turns an error of the YAML library into a ParseError; known
// lists the keys valid where an unknown key was found.
func (p *scriptParser) yamlError(w where, node ast.Node, err error, known string) *ParseError {
	e := &ParseError{File: p.file, Turn: w.turn, Branch: w.branch, Call: w.call, Msg: err.Error()}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return e
	}
	if tk := ye.GetToken(); tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	e.Msg = ye.GetMessage()
	var (
		unknown *yaml.UnknownFieldError
		typeErr *yaml.TypeError
		over    *yaml.OverflowError
	)
	switch {
	case errors.As(err, &unknown):
		if tk := ye.GetToken(); tk != nil {
			e.Field = tk.Value
		}
		e.Msg = "unknown key (known keys: " + known + ")"
	case errors.As(err, &typeErr):
		if typeErr.StructFieldName != nil {
			name := *typeErr.StructFieldName
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				name = name[i+1:]
			}
			e.Field = goFields[name]
		}
		e.Msg = fmt.Sprintf("want %s, got %s", kindName(typeErr.DstType.String()), kindName(typeErr.SrcType.String()))
	case errors.As(err, &over):
		e.Msg = fmt.Sprintf("%s is out of range (want a non-negative integer below 2^64)", over.SrcNum)
	}
	if e.Field == "" {
		e.Field = keyOf(node, ye.GetToken())
	}
	return e
}

// kindName turns a Go type into the word a script author knows.
func kindName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map"):
		return "a mapping"
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "string"):
		return "a string"
	case strings.Contains(goType, "bool"):
		return "a boolean"
	}
	return goType
}

// isMapping reports whether node is a YAML mapping.
func isMapping(node ast.Node) bool {
	switch node.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return true
	}
	return false
}

// valueOf returns the value node of key in a mapping node, nil when absent.
func valueOf(node ast.Node, key string) ast.Node {
	var values []*ast.MappingValueNode
	switch n := node.(type) {
	case *ast.MappingNode:
		values = n.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{n}
	}
	for _, mv := range values {
		if mv == nil || mv.Key == nil {
			continue
		}
		if tk := mv.Key.GetToken(); tk != nil && tk.Value == key {
			if mv.Value == nil {
				return mv.Key
			}
			return mv.Value
		}
	}
	return nil
}

// entryNode returns a node with the position of sequence entry i, also when
// the entry is empty.
func entryNode(seq *ast.SequenceNode, i int) ast.Node {
	if v := seq.Values[i]; v != nil && v.GetToken() != nil {
		if _, null := v.(*ast.NullNode); !null || i >= len(seq.Entries) {
			return v
		}
	}
	if i < len(seq.Entries) && seq.Entries[i] != nil {
		return seq.Entries[i]
	}
	return seq
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func join[T ~string](list []T) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}
