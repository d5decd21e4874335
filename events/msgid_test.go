package events_test

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/factline/factline/events"
)

// reservedWords are the words factline itself puts in message IDs, past and
// present, and the separator and escape characters: what a user-chosen name
// colliding with one of factline's would use.
var reservedWords = []string{"verdict", "conflict", "stall", "stop", "started", "replied", "completed", "intended",
	"claim", "control", "generation", "sealed", "ended", "requested", "reported", "submitted", "timeout",
	"1", "2", "t1", "_suite", "", "/", "%", "%2F", "%25", "%00", "a/b", "verdict/1"}

// idTuple is what a message ID is derived from.
type idTuple struct {
	run   string
	kind  events.Kind
	parts []string
}

var genIDTuple = rapid.Custom(func(t *rapid.T) idTuple {
	name := rapid.OneOf(rapid.SampledFrom(reservedWords), rapid.SampledFrom(kindWords()), rapid.StringMatching(`[a-z0-9/%._-]{0,8}`))
	return idTuple{
		run:   name.Draw(t, "run"),
		kind:  rapid.SampledFrom(events.Kinds()).Draw(t, "kind"),
		parts: rapid.SliceOfN(name, 0, 4).Draw(t, "parts"),
	}
})

func kindWords() []string {
	var out []string
	for _, k := range events.Kinds() {
		out = append(out, string(k))
	}
	return out
}

// Distinct (run, kind, parts) never share a message ID, whatever names the
// user chose, reserved words and separators included.
func TestMessageIDsNeverCollide(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genIDTuple.Draw(t, "a"), genIDTuple.Draw(t, "b")
		same := a.run == b.run && a.kind == b.kind && slices.Equal(a.parts, b.parts)
		if ida, idb := events.MessageID(a.run, a.kind, a.parts...), events.MessageID(b.run, b.kind, b.parts...); (ida == idb) != same {
			t.Fatalf("%+v → %q and %+v → %q", a, ida, b, idb)
		}
	})
}

// The kind is always the second segment, and a part never splits.
func TestMessageIDShape(t *testing.T) {
	id := events.MessageID("r1", events.KindGradeInstrument, "abc", "verdict/1", "")
	if got := strings.Split(id, "/"); len(got) != 5 || got[1] != string(events.KindGradeInstrument) {
		t.Fatalf("%q splits into %q", id, got)
	}
}
