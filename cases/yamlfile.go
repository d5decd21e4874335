package cases

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// DecodeYAML decodes one YAML file into v, refusing unknown keys. Its
// errors are *Error values naming the file, the line and the field as the
// author wrote it (budget.steps, checks[1].timeout), and saying what the
// field wants in the author's words, never a Go type.
func DecodeYAML(name string, data []byte, v any) error {
	if err := checkWholeNumbers(data, v); err != nil {
		return YAMLError(name, data, err)
	}
	err := yaml.UnmarshalWithOptions(data, v, yaml.Strict(), yaml.DisallowUnknownField())
	if err == nil {
		return nil
	}
	return YAMLError(name, data, err)
}

// nodeError is a problem with one value of a YAML file found by a custom
// decoder; it keeps the node so that the error names the value's path and
// line.
type nodeError struct {
	node ast.Node
	msg  string
}

func (e *nodeError) Error() string { return e.msg }

func nodeErr(node ast.Node, format string, args ...any) error {
	return &nodeError{node: node, msg: fmt.Sprintf(format, args...)}
}

// YAMLError turns an error of the YAML decoder, decoding data, into an
// *Error: the line and the field path are found from the position the
// decoder reports, in the file's own syntax tree.
func YAMLError(name string, data []byte, err error) *Error {
	e := &Error{File: name, Msg: err.Error()}
	var ne *nodeError
	if errors.As(err, &ne) {
		e.Field, e.Msg = pathOf(ne.node), ne.msg
		e.Line, _ = nodePosition(ne.node)
		return e
	}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return e
	}
	e.Msg = ye.GetMessage()
	tk := ye.GetToken()
	if tk == nil || tk.Position == nil {
		return e
	}
	e.Line = tk.Position.Line
	node := nodeAt(data, tk.Position)
	if node != nil {
		e.Field = pathOf(node)
	}
	var (
		typeErr  *yaml.TypeError
		over     *yaml.OverflowError
		unknown  *yaml.UnknownFieldError
		nodeType *yaml.UnexpectedNodeTypeError
	)
	switch {
	case errors.As(err, &typeErr):
		e.Msg = fmt.Sprintf("want %s, got %s", wantOf(typeErr.DstType), gotOf(node, typeErr.SrcType))
	case errors.As(err, &over):
		e.Msg = fmt.Sprintf("%s is out of range (want %s)", over.SrcNum, rangeOf(over.DstType))
	case errors.As(err, &unknown):
		e.Msg = "unknown key"
	case errors.As(err, &nodeType):
		e.Msg = fmt.Sprintf("want %s, got %s", nodeTypeName(nodeType.Expected), gotOf(node, nil))
	}
	return e
}

// nodeAt finds the innermost node of data's syntax tree that starts at pos.
func nodeAt(data []byte, pos *token.Position) ast.Node {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil
	}
	var found ast.Node
	v := &finder{line: pos.Line, column: pos.Column, found: &found}
	for _, d := range f.Docs {
		ast.Walk(v, d)
	}
	return found
}

type finder struct {
	line, column int
	found        *ast.Node
}

// Visit keeps the last node (in pre-order, so the innermost) that starts
// at the position.
func (f *finder) Visit(n ast.Node) ast.Visitor {
	if tk := n.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line == f.line && tk.Position.Column == f.column {
		*f.found = n
	}
	return f
}

// pathOf is a node's path as an author writes it: checks[1].timeout.
func pathOf(node ast.Node) string {
	if node == nil {
		return ""
	}
	p := strings.TrimPrefix(node.GetPath(), "$")
	return strings.TrimPrefix(p, ".")
}

func nodePosition(node ast.Node) (line, column int) {
	if node == nil {
		return 0, 0
	}
	if tk := node.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line, tk.Position.Column
	}
	return 0, 0
}

// wantOf says what a Go type holds, in a file author's words.
func wantOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a value"
}

// rangeOf is the range of an integer type, in words.
func rangeOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a whole number"
	}
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("a whole number from %d to %d", -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1)
	}
	return wantOf(t)
}

// gotOf describes the value a node holds (or, without a node, the Go type
// the decoder read it as).
func gotOf(node ast.Node, src reflect.Type) string {
	switch n := node.(type) {
	case *ast.StringNode:
		if text, ok := unquotedNumber(n); ok {
			return text
		}
		return fmt.Sprintf("a string (%s)", quoteShort(n.Value))
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value
	case *ast.NullNode:
		return "nothing"
	case *ast.SequenceNode:
		return "a list"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.LiteralNode:
		return "a block of text"
	}
	if src != nil {
		return wantOf(src)
	}
	return "something else"
}

func nodeTypeName(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.StringType, ast.LiteralType:
		return "a string"
	case ast.IntegerType:
		return "a whole number"
	case ast.FloatType:
		return "a number"
	case ast.BoolType:
		return "true or false"
	}
	return "a " + strings.ToLower(t.String())
}

// quoteShort quotes s, cut to a length an error line can hold.
func quoteShort(s string) string {
	const max = 40
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// wholeNumber reads an integer node of a YAML file that must lie in
// [0, max]; a null node is 0 (the field left empty). Anything else — a
// fraction, a string, a negative number — is refused naming the node, a
// negative one with the hint negative.
func wholeNumber(node ast.Node, max uint64, negative string) (uint64, error) {
	if n, ok := node.(*ast.IntegerNode); ok {
		if v, ok := n.Value.(int64); ok && v < 0 {
			return 0, nodeErr(node, "%d is negative%s", v, negative)
		}
	}
	return Count(node, 0, max, "")
}

// Count reads a count from a node of a YAML file: a whole number in [min,
// max]. A null or absent node is min's caller's business: Count refuses
// it like any value that is not a whole number. A count below min says
// tooFew as a hint. Its errors locate the node for YAMLError.
func Count(node ast.Node, min, max uint64, tooFew string) (uint64, error) {
	switch n := node.(type) {
	case nil, *ast.NullNode:
		if min == 0 {
			return 0, nil
		}
	case *ast.IntegerNode:
		var v uint64
		switch x := n.Value.(type) {
		case int64:
			if x < 0 {
				return 0, nodeErr(node, "%d is too few (at least %d%s)", x, min, tooFew)
			}
			v = uint64(x)
		case uint64:
			v = x
		default:
			return 0, nodeErr(node, "want a whole number, got %s", gotOf(node, nil))
		}
		if v < min {
			return 0, nodeErr(node, "%d is too few (at least %d%s)", v, min, tooFew)
		}
		if v > max {
			return 0, nodeErr(node, "%d is too large (at most %d)", v, max)
		}
		return v, nil
	}
	if err := tooLargeErr(node, max); err != nil {
		return 0, err
	}
	return 0, nodeErr(node, "want a whole number, got %s", gotOf(node, nil))
}

// unquotedNumber reports whether n is a number the author wrote without
// quotes that the YAML parser still read as a string: one too large for
// any integer (100000000000000000000000) or written with an exponent
// (1e30). Calling it "a string" would blame quotes nobody wrote.
func unquotedNumber(n *ast.StringNode) (string, bool) {
	if n.Token == nil || n.Token.Type != token.StringType {
		return "", false
	}
	text := n.Token.Value
	if _, err := strconv.ParseFloat(text, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", false
	}
	return text, true
}

// tooLargeErr refuses, naming the bound, an unquoted whole number too
// large for the parser to read as one; nil for any other node.
func tooLargeErr(node ast.Node, max uint64) error {
	n, ok := node.(*ast.StringNode)
	if !ok {
		return nil
	}
	text, ok := unquotedNumber(n)
	if !ok || strings.TrimLeft(strings.TrimPrefix(text, "+"), "0123456789") != "" {
		return nil
	}
	return nodeErr(node, "%s is too large (at most %d)", text, max)
}

// NodeError is a problem with one node of a YAML file; YAMLError names the
// node's field and line.
func NodeError(node ast.Node, format string, args ...any) error {
	return nodeErr(node, format, args...)
}

// UnmarshalYAML reads a duration from a YAML file, so that a bad one is
// named by its field and line (UnmarshalText, used for stored JSON, cannot
// know them).
func (d *Duration) UnmarshalYAML(node ast.Node) error {
	var text string
	switch n := node.(type) {
	case *ast.NullNode:
		*d = 0
		return nil
	case *ast.StringNode:
		text = n.Value
	case *ast.IntegerNode, *ast.FloatNode:
		text = n.GetToken().Value
	default:
		return nodeErr(node, "want a duration such as 90s or 5m, got %s", gotOf(node, nil))
	}
	if err := d.UnmarshalText([]byte(text)); err != nil {
		return nodeErr(node, "%v", err)
	}
	return nil
}

// FieldLine is fieldLine for the files of other packages written in the
// same YAML (a suite file): the line of the key an error names, as a case
// file's errors have it.
func FieldLine(data []byte, field string) int { return fieldLine(data, field) }

// fieldLine finds the line of a field, given by its path as errors name it
// (grading.scorers[1].pass_at), in a YAML file; a field that is not there
// (a required one left out) is placed at the nearest enclosing one. 0 when
// nothing of the path is found.
func fieldLine(data []byte, field string) int {
	if field == "" {
		return 0
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return 0
	}
	for p := field; p != ""; p = parentField(p) {
		path, err := yaml.PathString("$." + p)
		if err != nil {
			continue
		}
		if node, err := path.FilterFile(file); err == nil && node != nil {
			line, _ := nodePosition(node)
			return line
		}
	}
	return 0
}

// parentField drops the last step of a field path: a key or an index.
func parentField(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}
