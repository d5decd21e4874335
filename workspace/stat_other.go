//go:build !linux

package workspace

import "io/fs"

// oNoFollow is not available portably outside Linux.
const oNoFollow = 0

// keyOf returns what a scan compares to decide that a file is unchanged.
// Outside Linux only size, mode and mtime are compared.
func keyOf(fi fs.FileInfo) statKey {
	return statKey{size: fi.Size(), mode: fi.Mode(), mtime: fi.ModTime().UnixNano()}
}
