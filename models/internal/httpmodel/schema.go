package httpmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Schema decodes a tool's JSON schema, keeping integers exact.
func Schema(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not a JSON object: trailing data")
	}
	if v == nil {
		return nil, fmt.Errorf("not a JSON object: null")
	}
	return numbers(v).(map[string]any), nil
}

// numbers replaces the json.Numbers in v by int64, uint64 or float64 (the
// SDK's encoder would write a json.Number as a string).
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u
		}
		f, _ := x.Float64()
		return f
	}
	return v
}
