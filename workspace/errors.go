package workspace

import (
	"errors"
	"fmt"
)

// Sentinel errors classify failures. Match them with errors.Is; use errors.As
// with *PathError to learn which path was refused and why.
var (
	// ErrEscape means a path would lead outside the workspace root: a ".."
	// that climbs above it, an absolute path elsewhere, or a symlink whose
	// target lies outside.
	ErrEscape = errors.New("path escapes the workspace root")
	// ErrInvalidPath means a path is malformed (a NUL byte, an empty or "."
	// or ".." component in a manifest, a file used as a directory, a symlink
	// loop).
	ErrInvalidPath = errors.New("invalid path")
	// ErrBadManifest means manifest bytes or entries are not a valid,
	// canonical manifest.
	ErrBadManifest = errors.New("bad manifest")
	// ErrCorrupt means bytes read from the blob store do not match the
	// digest (or size) they were asked for.
	ErrCorrupt = errors.New("corrupt blob")
	// ErrNotEmpty means Materialise was given a target that already has
	// entries.
	ErrNotEmpty = errors.New("target directory is not empty")
	// ErrTooLarge means a tree has more entries or file bytes than the
	// configured bounds. Trees are refused, never truncated.
	ErrTooLarge = errors.New("workspace too large")
	// ErrUnsupported means the tree holds an entry the manifest cannot
	// represent (a FIFO, socket or device), which is refused unless ignored.
	ErrUnsupported = errors.New("unsupported file type")
	// ErrIgnored means a manifest holds a path that the workspace's ignore
	// rules would leave out, so the first rescan would drop it.
	ErrIgnored = errors.New("path matches an ignore pattern")
)

// PathError reports a path that was refused, with the reason.
type PathError struct {
	Path   string // the path as given, or as written in the manifest
	Reason string // what is wrong, for people
	Err    error  // one of the sentinel errors, for errors.Is
}

// Error describes the refused path and the reason.
func (e *PathError) Error() string {
	return fmt.Sprintf("workspace path %q: %s", e.Path, e.Reason)
}

// Unwrap returns the sentinel classification.
func (e *PathError) Unwrap() error { return e.Err }

func pathErr(p string, sentinel error, format string, args ...any) *PathError {
	return &PathError{Path: p, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// Bound names one of a workspace's bounds (Options.MaxEntries,
// Options.MaxBytes).
type Bound string

// The bounds a LimitError names.
const (
	BoundEntries Bound = "entries"
	BoundBytes   Bound = "bytes"
)

// LimitError is a tree past one of its bounds. It matches ErrTooLarge; a
// caller that tells someone about it (a model whose write passed the
// workspace limit) uses Limit, which names no host path.
type LimitError struct {
	Root  string // the directory (or "the manifest") that is too large
	Bound Bound  // which bound
	Max   int64  // the bound's value
}

// Error describes the tree and the bound.
func (e *LimitError) Error() string {
	if e.Bound == BoundEntries {
		return fmt.Sprintf("%v: %s has more than %d entries (Options.MaxEntries)", ErrTooLarge, e.Root, e.Max)
	}
	return fmt.Sprintf("%v: %s holds more than %d bytes of file content (Options.MaxBytes)", ErrTooLarge, e.Root, e.Max)
}

// Unwrap makes errors.Is(err, ErrTooLarge) true.
func (e *LimitError) Unwrap() error { return ErrTooLarge }

// Limit says the bound in words: "at most 1073741824 bytes of file
// content".
func (e *LimitError) Limit() string {
	if e.Bound == BoundEntries {
		return fmt.Sprintf("at most %d entries", e.Max)
	}
	return fmt.Sprintf("at most %d bytes of file content", e.Max)
}
