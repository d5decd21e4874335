package measure

import (
	"slices"
	"testing"
)

// TestFirstSeenKeepsOneRowPerKeyInFirstOrder: a key seen again reaches
// the row it first made (the fresh value of a later call is dropped), and
// the rows keep the order their keys first came.
func TestFirstSeenKeepsOneRowPerKeyInFirstOrder(t *testing.T) {
	var g firstSeen[string, []string]
	for _, kv := range [][2]string{{"b", "1"}, {"a", "2"}, {"b", "3"}, {"c", "4"}, {"a", "5"}} {
		r := g.row(kv[0], []string{"fresh " + kv[0]})
		*r = append(*r, kv[1])
	}
	want := [][]string{{"fresh b", "1", "3"}, {"fresh a", "2", "5"}, {"fresh c", "4"}}
	if !slices.EqualFunc(g.rows, want, slices.Equal[[]string]) {
		t.Fatalf("rows = %q, want %q", g.rows, want)
	}
	var empty firstSeen[int, int]
	if empty.rows != nil {
		t.Fatalf("no key seen: rows = %v, want nil (a report without attempts regroups to nothing)", empty.rows)
	}
}
