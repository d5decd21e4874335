package workspace

import (
	"strings"

	"github.com/factline/factline/events"
)

// ChangeKind says how a path differs between two manifests.
type ChangeKind string

// The ways a path can differ. There is no rename: a moved file is a removed
// path and an added one.
const (
	Added    ChangeKind = "added"    // only in the newer manifest
	Removed  ChangeKind = "removed"  // only in the older manifest
	Modified ChangeKind = "modified" // in both, with another kind, size, digest or target
)

// PathChange is one path that differs between two manifests.
type PathChange struct {
	Path string
	Kind ChangeKind
	Old  Entry // the older entry; zero when Added
	New  Entry // the newer entry; zero when Removed
}

// Change is what a rescan found: the digests before and after, and the paths
// that differ (sorted by path; empty when the digest did not change).
type Change struct {
	Before events.Digest
	After  events.Digest
	Paths  []PathChange
}

// Changed reports whether the tree's content changed.
func (c Change) Changed() bool { return c.Before != c.After }

// Diff returns the paths that differ from a to b, sorted by path. An empty
// result means the manifests, and so their digests, are equal.
func Diff(a, b Manifest) []PathChange {
	var out []PathChange
	x, y := a.entries, b.entries
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		var c int
		switch {
		case i == len(x):
			c = 1
		case j == len(y):
			c = -1
		default:
			c = strings.Compare(x[i].Path, y[j].Path)
		}
		switch {
		case c < 0:
			out = append(out, PathChange{Path: x[i].Path, Kind: Removed, Old: x[i]})
			i++
		case c > 0:
			out = append(out, PathChange{Path: y[j].Path, Kind: Added, New: y[j]})
			j++
		default:
			if !x[i].same(y[j]) {
				out = append(out, PathChange{Path: x[i].Path, Kind: Modified, Old: x[i], New: y[j]})
			}
			i++
			j++
		}
	}
	return out
}
