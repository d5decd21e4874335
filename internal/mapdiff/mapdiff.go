// Package mapdiff names the keys on which two maps disagree: the fields of
// two versions of a thing that differ, said to a user who changed one.
package mapdiff

import (
	"cmp"
	"slices"
)

// Keys returns, sorted, every key whose value differs between a and b,
// including each key only one of them has.
func Keys[K cmp.Ordered, V comparable](a, b map[K]V) []K {
	var out []K
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
