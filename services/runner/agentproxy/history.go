package agentproxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The checks here refuse a history the provider of the wire would refuse
// (a call's arguments that are no JSON object, a tool result answering no
// call the history made). Passed on, such a history was recorded as a
// turn and reached the model port, which either sent it to a provider
// that refused it or could not render it at all (the Anthropic port needs
// an object): the run ended errored (model_error, or a harness error) on
// the agent's mistake, with a turn started and never completed. Refused
// here, before the attempt is called, it is the agent's to mend, and
// nothing is recorded for it.

// callArguments checks a call's arguments as the history gives them back:
// blank (a call without arguments, as some models make it, which the model
// port reads as {}) or a JSON object, as every provider's tool input is.
func callArguments(args string) error {
	if strings.TrimSpace(args) == "" {
		return nil
	}
	if !json.Valid([]byte(args)) {
		return fmt.Errorf("not valid JSON: %q", clip(args, 80))
	}
	return jsonObject(json.RawMessage(args))
}

// jsonObject says what raw is when it is not a JSON object.
func jsonObject(raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("not valid JSON: %q", clip(string(raw), 80))
	}
	switch v.(type) {
	case map[string]any:
		return nil
	case nil:
		return fmt.Errorf("want a JSON object, got null")
	case []any:
		return fmt.Errorf("want a JSON object, got an array")
	case string:
		return fmt.Errorf("want a JSON object, got a string")
	case bool:
		return fmt.Errorf("want a JSON object, got true or false")
	}
	return fmt.Errorf("want a JSON object, got a number")
}

// madeCalls are the IDs of the calls a history has made so far, read in
// order: a tool result must answer one of them, as every provider
// requires.
type madeCalls map[string]bool

// answers checks that id, a tool result's, names a call made before it;
// call is how the wire names a call.
func (m madeCalls) answers(id, call string) error {
	switch {
	case id == "":
		return fmt.Errorf("required")
	case !m[id]:
		return fmt.Errorf("%q answers no %s made before it", clip(id, 80), call)
	}
	return nil
}

// clip is s cut to n bytes (at a rune's start) with an ellipsis when
// longer: a message quotes what it refuses, not all of it.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
