package step

import (
	"slices"
	"testing"

	"github.com/factline/factline/events"
)

// Calls without an ID are named by their place, repeated IDs are marked
// as duplicates, and a duplicate still tells the ID the model gave it.
func TestNameCalls(t *testing.T) {
	calls := []events.ToolCall{{ID: "a"}, {}, {ID: "a"}, {ID: "b"}, {ID: "a"}, {}}
	NameCalls(calls)
	var ids []events.CallID
	for _, c := range calls {
		ids = append(ids, c.ID)
	}
	want := []events.CallID{"a", "#call-2", "a#dup1", "b", "a#dup2", "#call-6"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	for i, id := range ids {
		if dup := IsDuplicate(id); dup != (i == 2 || i == 4) {
			t.Errorf("%s: duplicate %v", id, dup)
		}
	}
	if OriginalID("a#dup2") != "a" || OriginalID("b") != "b" {
		t.Error("the original ID of a duplicate is lost")
	}
	if EvidenceRef(3, "a#dup1") != "t3/a#dup1" {
		t.Errorf("evidence ref %s", EvidenceRef(3, "a#dup1"))
	}
}

// Names factline chooses never collide with IDs a model chose: a model's
// "call-2" beside a call without an ID, or a model's literal "a#dup1", are
// their own calls, run, never taken for a renamed duplicate.
func TestNameCallsNeverCollideWithModelIDs(t *testing.T) {
	calls := []events.ToolCall{{ID: "call-2"}, {}, {ID: "a"}, {ID: "a#dup1"}, {ID: "a"}, {ID: "50%"}, {ID: "50%25"}}
	NameCalls(calls)
	seen := map[events.CallID]bool{}
	for i, c := range calls {
		if seen[c.ID] {
			t.Fatalf("call %d got the ID %q twice", i, c.ID)
		}
		seen[c.ID] = true
		if dup := IsDuplicate(c.ID); dup != (i == 4) {
			t.Errorf("call %d (%q): duplicate %v", i, c.ID, dup)
		}
	}
	for i, want := range []string{"call-2", "", "a", "a#dup1", "a", "50%", "50%25"} {
		if got := OriginalID(calls[i].ID); got != want {
			t.Errorf("call %d: original ID %q, want %q", i, got, want)
		}
	}
}
