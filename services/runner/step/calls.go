package step

import (
	"fmt"
	"strings"

	"github.com/factline/factline/events"
)

// EvidenceRef is how a call's result is cited: t<turn>/<call-id>, as the
// Preamble tells the model.
func EvidenceRef(turn uint32, id events.CallID) events.EvidenceRef {
	return events.EvidenceRef(fmt.Sprintf("t%d/%s", turn, id))
}

// dupMark joins a repeated call ID to its count.
const dupMark = "#dup"

// NameCalls gives the calls of one reply IDs a fact can store, in place.
// A fact refuses an empty or a repeated call ID, and a model may send
// either: a call without an ID is named call-<n> after its place in the
// reply, and a later call reusing an ID gets the suffix #dup<n>, which
// marks it to be answered with a typed error instead of being run.
func NameCalls(calls []events.ToolCall) {
	seen := map[events.CallID]int{}
	for i := range calls {
		id := calls[i].ID
		if id == "" {
			id = events.CallID(fmt.Sprintf("call-%d", i+1))
			calls[i].ID = id
		}
		if n := seen[id]; n > 0 {
			calls[i].ID = events.CallID(fmt.Sprintf("%s%s%d", id, dupMark, n))
		}
		seen[id]++
	}
}

// IsDuplicate reports whether a stored call ID is a renamed duplicate.
func IsDuplicate(id events.CallID) bool { return strings.Contains(string(id), dupMark) }

// OriginalID is the ID the model gave a call before any renaming.
func OriginalID(id events.CallID) string {
	s, _, _ := strings.Cut(string(id), "#")
	return s
}
