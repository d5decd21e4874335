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
// The three wires share it; they differ in when a call's answers must
// come. OpenAI's Chat Completions and Anthropic's Messages require them
// at once: the tool messages right after the assistant message (OpenAI),
// the tool_result blocks in the next message (Anthropic); such a wire
// calls closeTurn at the first message that cannot hold an answer, and
// at the next call-making message. OpenAI's Responses pairs a
// function_call_output with its function_call anywhere after it, and
// closes only at the end.
type madeCalls struct {
	// open are the calls no tool result answered yet, by ID, and where
	// each was made; order holds their IDs in the order made.
	open  map[string]string
	order []string
	// closed are the IDs of calls answered, or of an earlier turn: a
	// result naming one answers a call that is no longer open.
	closed map[string]bool
}

func newMadeCalls() *madeCalls {
	return &madeCalls{open: map[string]string{}, closed: map[string]bool{}}
}

// made records the call id made at where. An ID of a call still open is
// refused: its results could not say which call they answer (Anthropic
// refuses tool_use IDs that are not unique). An ID an earlier, answered
// call had is taken: a model that numbers its calls per reply (call_0)
// makes it again, and the proxy takes back what its model made.
func (m *madeCalls) made(id, where string) error {
	if first, ok := m.open[id]; ok {
		return fmt.Errorf("%q is the id of %s too, which no tool result has answered yet: ids must be unique", clip(id, 80), first)
	}
	m.open[id] = where
	m.order = append(m.order, id)
	return nil
}

// answers checks that id, a tool result's, names a call still open (made
// before it, in the turn the wire requires, and not answered yet), and
// marks it answered; call is how the wire names a call, open where the
// calls it may answer are ("of the assistant message before it").
func (m *madeCalls) answers(id, call, open string) error {
	switch _, ok := m.open[id]; {
	case id == "":
		return fmt.Errorf("required")
	case ok:
		delete(m.open, id)
		m.closed[id] = true
		return nil
	case m.closed[id]:
		return fmt.Errorf("%q answers no %s %s: the %s it names was answered already or made in an earlier turn", clip(id, 80), call, open, call)
	}
	return fmt.Errorf("%q answers no %s made before it", clip(id, 80), call)
}

// closeTurn ends the turn whose calls are open: it is the error of the
// first call no tool result answered, nil when every call was. call is
// how the wire names a call, result a tool result, and before where the
// answers had to come.
func (m *madeCalls) closeTurn(call, result, before string) error {
	for _, id := range m.order {
		if where, ok := m.open[id]; ok {
			return fmt.Errorf("%s: %s %q is answered by no %s %s", where, call, clip(id, 80), result, before)
		}
	}
	for _, id := range m.order {
		m.closed[id] = true
	}
	m.order = m.order[:0]
	return nil
}

// aRole is a message's role with its article ("an assistant message").
func aRole(role string) string {
	if strings.ContainsRune("aeiou", rune(strings.ToLower(role + "x")[0])) {
		return "an " + role + " message"
	}
	return "a " + role + " message"
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
