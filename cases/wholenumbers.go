package cases

import (
	"math"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// checkWholeNumbers refuses a value written where v's type holds a whole
// number but which is not one: a fraction, an infinity, a number in
// quotes. The YAML decoder itself reads 2.5 into an int as 2 and "1e3" as
// 1000, which would run a case other than the one its author wrote. The
// file's syntax tree is walked alongside v's type, so the check knows
// nothing of any particular field.
func checkWholeNumbers(data []byte, v any) error {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		// The decoder reports a file it cannot parse, with its position.
		return nil
	}
	t := reflect.TypeOf(v)
	for _, d := range f.Docs {
		if err := wholeIn(d.Body, t); err != nil {
			return err
		}
	}
	return nil
}

var (
	nodeUnmarshaler  = reflect.TypeFor[yaml.NodeUnmarshaler]()
	nodeUnmarshalerC = reflect.TypeFor[yaml.NodeUnmarshalerContext]()
	bytesUnmarshaler = reflect.TypeFor[yaml.BytesUnmarshaler]()
	bytesUnmarshalC  = reflect.TypeFor[yaml.BytesUnmarshalerContext]()
	ifaceUnmarshaler = reflect.TypeFor[yaml.InterfaceUnmarshaler]()
	ifaceUnmarshalC  = reflect.TypeFor[yaml.InterfaceUnmarshalerContext]()
)

// decodesItself reports whether t (or *t) reads its own YAML: its
// UnmarshalYAML checks what it accepts.
func decodesItself(t reflect.Type) bool {
	for _, u := range []reflect.Type{nodeUnmarshaler, nodeUnmarshalerC, bytesUnmarshaler, bytesUnmarshalC, ifaceUnmarshaler, ifaceUnmarshalC} {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return true
		}
	}
	return false
}

func wholeIn(node ast.Node, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if node == nil || t == nil || decodesItself(t) {
		return nil
	}
	switch n := node.(type) {
	case *ast.TagNode:
		return wholeIn(n.Value, t)
	case *ast.AnchorNode:
		return wholeIn(n.Value, t)
	case *ast.MappingNode:
		for _, kv := range n.Values {
			if err := wholeIn(kv, t); err != nil {
				return err
			}
		}
		return nil
	case *ast.MappingValueNode:
		if et, ok := entryType(t, n.Key); ok {
			return wholeIn(n.Value, et)
		}
		return nil
	case *ast.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil
		}
		for _, item := range n.Values {
			if err := wholeIn(item, t.Elem()); err != nil {
				return err
			}
		}
		return nil
	}
	if !isWhole(t) {
		return nil
	}
	if err := tooLargeErr(node, maxOf(t)); err != nil {
		return err
	}
	switch node.(type) {
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode, *ast.StringNode:
		return nodeErr(node, "want a whole number, got %s", gotOf(node, nil))
	}
	return nil
}

// maxOf is the largest value a whole-number type holds.
func maxOf(t reflect.Type) uint64 {
	bits := uint(t.Bits())
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return math.MaxUint64 >> (64 - bits)
	}
	return math.MaxUint64 >> (65 - bits)
}

func isWhole(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// entryType is the type a mapping entry decodes into: a map's element, or
// the struct field its key names (through inline fields, as the decoder
// looks them up). An unknown key is the decoder's to refuse.
func entryType(t reflect.Type, key ast.MapKeyNode) (reflect.Type, bool) {
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), true
	case reflect.Struct:
		name := strings.TrimSpace(key.GetToken().Value)
		return fieldType(t, name)
	}
	return nil, false
}

func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		parts := strings.Split(tag, ",")
		if parts[0] == "-" {
			continue
		}
		inline := f.Anonymous && parts[0] == ""
		for _, p := range parts[1:] {
			inline = inline || p == "inline"
		}
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if got, ok := fieldType(ft, name); ok {
					return got, true
				}
			}
			continue
		}
		fieldName := parts[0]
		if fieldName == "" {
			fieldName = strings.ToLower(f.Name)
		}
		if fieldName == name {
			return f.Type, true
		}
	}
	return nil, false
}
