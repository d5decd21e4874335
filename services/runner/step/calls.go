package step

import (
	"fmt"
	"strings"

	"github.com/factline/factline/events"
)

// EvidenceRef is how a call's result is cited: t<turn>/<call-id>, as the
// system prompt tells the model (cases.DefaultSystemPrompt).
func EvidenceRef(turn uint32, id events.CallID) events.EvidenceRef {
	return events.EvidenceRef(fmt.Sprintf("t%d/%s", turn, id))
}

// dupMark joins a repeated call ID to its count. '#' marks a name factline
// chose: a model's own IDs are stored with '#' (and '%') escaped, so no
// model ID can take or imitate one.
const dupMark = "#dup"

// UnnamedTool is the tool name a call the model gave no name is stored
// under: a fact refuses an empty name, and no tool is named with a '#', so
// the call is refused as calling no tool, never run. (Local servers' tool
// parsers send a call with an empty name when the model garbles one.)
const UnnamedTool = "#unnamed"

// NameCalls gives the calls of one reply IDs a fact can store, in place.
// A fact refuses an empty or a repeated call ID, and a model may send
// either. A model's ID is kept, with '%' and '#' percent-escaped; a call
// without an ID is named #call-<n> after its place in the reply; a later
// call reusing an ID gets the suffix #dup<n>, which marks it to be
// answered with a typed error instead of being run. Names factline
// chooses hold a bare '#', which no escaped model ID does, so a model's
// "call-2" or "a#dup1" is never mistaken for one of them. A call without
// a tool name is given UnnamedTool.
func NameCalls(calls []events.ToolCall) {
	seen := map[events.CallID]int{}
	for i := range calls {
		if calls[i].Name == "" {
			calls[i].Name = UnnamedTool
		}
		id := events.CallID(escapeCallID(string(calls[i].ID)))
		if calls[i].ID == "" {
			id = events.CallID(fmt.Sprintf("#call-%d", i+1))
		}
		calls[i].ID = id
		if n := seen[id]; n > 0 {
			calls[i].ID = events.CallID(fmt.Sprintf("%s%s%d", id, dupMark, n))
		}
		seen[id]++
	}
}

// escapeCallID escapes the characters factline's own names use.
func escapeCallID(s string) string {
	if !strings.ContainsAny(s, "%#") {
		return s
	}
	return strings.NewReplacer("%", "%25", "#", "%23").Replace(s)
}

// IsDuplicate reports whether a stored call ID is a renamed duplicate.
func IsDuplicate(id events.CallID) bool { return strings.Contains(string(id), dupMark) }

// OriginalID is the ID the model gave a call before any renaming ("" for
// a call it gave none).
func OriginalID(id events.CallID) string {
	s, _, _ := strings.Cut(string(id), "#")
	if !strings.Contains(s, "%") {
		return s
	}
	return strings.NewReplacer("%23", "#", "%25", "%").Replace(s)
}
