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

// madeCalls are the calls a history has made so far, read in order, and
// which of them a tool result answered: every provider requires a tool
// result to answer a call made before it, and every call to be answered.
type madeCalls struct {
	// at is where each call was made, by ID; order its IDs in the order
	// made.
	at       map[string]string
	order    []string
	answered map[string]bool
}

func newMadeCalls() *madeCalls {
	return &madeCalls{at: map[string]string{}, answered: map[string]bool{}}
}

// made records the call id made at where. A second call with an ID made
// before stays the first's.
func (m *madeCalls) made(id, where string) {
	if _, ok := m.at[id]; !ok {
		m.at[id] = where
		m.order = append(m.order, id)
	}
}

// answers checks that id, a tool result's, names a call made before it,
// and marks the call answered; call is how the wire names a call.
func (m *madeCalls) answers(id, call string) error {
	switch _, ok := m.at[id]; {
	case id == "":
		return fmt.Errorf("required")
	case !ok:
		return fmt.Errorf("%q answers no %s made before it", clip(id, 80), call)
	}
	m.answered[id] = true
	return nil
}

// unanswered is the error of the first call no tool result answered, nil
// when every call was; result is how the wire names a tool result.
func (m *madeCalls) unanswered(call, result string) error {
	for _, id := range m.order {
		if !m.answered[id] {
			return fmt.Errorf("%s: %s %q is answered by no %s after it", m.at[id], call, clip(id, 80), result)
		}
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
