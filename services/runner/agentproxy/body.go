package agentproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// decodeBody reads a request body into v. A body of the wrong shape is
// refused in the wire's terms (the field as the agent wrote it, what it
// should hold and what it held): the decoder's own message names this
// package's Go types, which mean nothing to an agent's author.
func decodeBody(body []byte, v any) error {
	err := json.NewDecoder(bytes.NewReader(body)).Decode(v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr):
		field := typeErr.Field
		want := jsonKind(typeErr.Type)
		if field == "" {
			if want == "an object" {
				want = "a JSON object"
			}
			return fmt.Errorf("request body: want %s, got %s", want, jsonValue(typeErr.Value))
		}
		// The decoder's path has no array indices (messages.role): the
		// offset says which element.
		return fmt.Errorf("request body: %s (at byte %d): want %s, got %s", field, typeErr.Offset, want, jsonValue(typeErr.Value))
	}
	return fmt.Errorf("request body: %w", err)
}

// jsonKind is what a Go type is read from, in JSON's terms.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value of another kind"
}

// jsonValue names the kind of value the decoder met ("array", "number
// 1e400").
func jsonValue(v string) string {
	switch kind, _, _ := strings.Cut(v, " "); kind {
	case "array", "object":
		return "an " + kind
	case "string", "number":
		return "a " + v
	case "bool":
		return "true or false"
	}
	return v
}
