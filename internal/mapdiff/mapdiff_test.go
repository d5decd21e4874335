package mapdiff

import (
	"slices"
	"testing"
)

func TestKeysNamesChangedAddedAndRemovedKeysSorted(t *testing.T) {
	a := map[string]string{"same": "1", "changed": "x", "only_a": "a"}
	b := map[string]string{"same": "1", "changed": "y", "only_b": "b"}
	if got, want := Keys(a, b), []string{"changed", "only_a", "only_b"}; !slices.Equal(got, want) {
		t.Errorf("Keys = %v, want %v", got, want)
	}
}

func TestKeysOfEqualMapsIsEmpty(t *testing.T) {
	if got := Keys(map[string]int{"a": 1}, map[string]int{"a": 1}); len(got) != 0 {
		t.Errorf("Keys of equal maps = %v, want none", got)
	}
}
