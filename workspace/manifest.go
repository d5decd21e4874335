package workspace

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/factline/factline/events"
)

// Kind is the type of a manifest entry.
type Kind string

// The kinds of entry a manifest records. Directories are recorded only when
// nothing below them is: every other directory is implied by its entries.
const (
	KindFile    Kind = "file"    // a regular file without the owner's exec bit
	KindExec    Kind = "exec"    // a regular file with the owner's exec bit
	KindSymlink Kind = "symlink" // a symbolic link, recorded by its target
	KindDir     Kind = "dir"     // a directory with no recorded entries below it
)

func (k Kind) valid() bool {
	switch k {
	case KindFile, KindExec, KindSymlink, KindDir:
		return true
	}
	return false
}

// Entry is one path of a tree.
type Entry struct {
	// Path is relative to the root, slash-separated, with no empty, "." or
	// ".." component.
	Path string
	// Kind is what the path is.
	Kind Kind
	// Size is the file's length in bytes, the symlink target's length, or 0
	// for a directory.
	Size int64
	// Digest names the file's content (files only).
	Digest events.Digest
	// Target is the symlink's target, verbatim (symlinks only).
	Target string
}

// IsFile reports whether the entry is a regular file, executable or not.
func (e Entry) IsFile() bool { return e.Kind == KindFile || e.Kind == KindExec }

// same reports whether two entries for the same path record the same thing.
func (e Entry) same(o Entry) bool {
	return e.Kind == o.Kind && e.Size == o.Size && e.Digest == o.Digest && e.Target == o.Target
}

// Manifest is the sorted list of a tree's entries. It is an immutable value:
// every Manifest the package hands out is valid and canonical, and its
// digest is computed once. The zero Manifest is the empty tree.
type Manifest struct {
	entries []Entry
	digest  events.Digest
}

// manifestHeader starts every encoded manifest; the number is the format
// version.
const manifestHeader = "factline-manifest v1\n"

// NewManifest builds a manifest from entries in any order. It refuses
// duplicate paths, entries below a file, symlink or empty-directory entry,
// malformed paths and fields that do not belong to the entry's kind.
func NewManifest(entries []Entry) (Manifest, error) {
	es := slices.Clone(entries)
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	if err := validateEntries(es); err != nil {
		return Manifest{}, err
	}
	m, _ := sealed(es)
	return m, nil
}

// sealed computes the encoding and digest of valid, sorted entries.
func sealed(es []Entry) (Manifest, []byte) {
	m := Manifest{entries: es}
	enc := m.Encode()
	m.digest = events.DigestOf(enc)
	return m, enc
}

// Len returns the number of entries.
func (m Manifest) Len() int { return len(m.entries) }

// Entries returns a copy of the entries, sorted by path (byte order).
func (m Manifest) Entries() []Entry { return slices.Clone(m.entries) }

// Lookup returns the entry recorded for path, if any.
func (m Manifest) Lookup(path string) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(m.entries, path, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	if !ok {
		return Entry{}, false
	}
	return m.entries[i], true
}

// Bytes returns the total size of the regular files.
func (m Manifest) Bytes() int64 {
	var n int64
	for _, e := range m.entries {
		if e.IsFile() {
			n += e.Size
		}
	}
	return n
}

// Digest returns the workspace digest: the digest of the canonical encoding.
func (m Manifest) Digest() events.Digest {
	if m.digest != "" {
		return m.digest
	}
	return events.DigestOf(m.Encode())
}

// Encode returns the canonical encoding (see docs/workspace.md): a header
// line, then one line per entry in path order,
//
//	<path> <kind> <size> <ref>
//
// where ref is the content digest of a file, the target of a symlink and "-"
// for a directory, and path and target escape the bytes 0x00-0x20, '%' and
// 0x7F as %XX (uppercase hex).
func (m Manifest) Encode() []byte {
	n := len(manifestHeader)
	for _, e := range m.entries {
		n += len(e.Path) + len(e.Target) + 100
	}
	b := make([]byte, 0, n)
	b = append(b, manifestHeader...)
	for _, e := range m.entries {
		b = appendEscaped(b, e.Path)
		b = append(b, ' ')
		b = append(b, e.Kind...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, ' ')
		switch e.Kind {
		case KindSymlink:
			b = appendEscaped(b, e.Target)
		case KindDir:
			b = append(b, '-')
		default:
			b = append(b, e.Digest...)
		}
		b = append(b, '\n')
	}
	return b
}

// DecodeManifest parses a canonical encoding. Anything another encoder could
// have written differently (unsorted or duplicate entries, needless or
// lowercase escapes, leading zeros, a missing final newline) is refused, so
// that one tree has exactly one encoding and one digest.
func DecodeManifest(b []byte) (Manifest, error) {
	rest, ok := bytes.CutPrefix(b, []byte(manifestHeader))
	if !ok {
		return Manifest{}, fmt.Errorf("%w: missing header %q", ErrBadManifest, strings.TrimSuffix(manifestHeader, "\n"))
	}
	var es []Entry
	for line := 2; len(rest) > 0; line++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return Manifest{}, fmt.Errorf("%w: line %d: missing final newline", ErrBadManifest, line)
		}
		e, err := decodeLine(string(rest[:i]))
		if err != nil {
			return Manifest{}, fmt.Errorf("%w: line %d: %w", ErrBadManifest, line, err)
		}
		es = append(es, e)
		rest = rest[i+1:]
	}
	for i := 1; i < len(es); i++ {
		if es[i-1].Path >= es[i].Path {
			return Manifest{}, fmt.Errorf("%w: entries out of order or duplicated at %q", ErrBadManifest, es[i].Path)
		}
	}
	if err := validateEntries(es); err != nil {
		return Manifest{}, err
	}
	return Manifest{entries: es, digest: events.DigestOf(b)}, nil
}

func decodeLine(line string) (Entry, error) {
	f := strings.Split(line, " ")
	if len(f) != 4 {
		return Entry{}, fmt.Errorf("want 4 space-separated fields, have %d", len(f))
	}
	p, err := unescape(f[0])
	if err != nil {
		return Entry{}, fmt.Errorf("path: %w", err)
	}
	e := Entry{Path: p, Kind: Kind(f[1])}
	if !e.Kind.valid() {
		return Entry{}, fmt.Errorf("path %q: unknown kind %q", p, f[1])
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != f[2] {
		return Entry{}, fmt.Errorf("path %q: size %q is not a canonical non-negative decimal", p, f[2])
	}
	e.Size = size
	switch e.Kind {
	case KindSymlink:
		if e.Target, err = unescape(f[3]); err != nil {
			return Entry{}, fmt.Errorf("path %q: target: %w", p, err)
		}
	case KindDir:
		if f[3] != "-" {
			return Entry{}, fmt.Errorf("path %q: a directory's ref must be \"-\", not %q", p, f[3])
		}
	default:
		e.Digest = events.Digest(f[3])
	}
	return e, nil
}

// LoadManifest fetches the manifest named by d from the blob store, checks
// that its bytes match d and decodes it.
func LoadManifest(ctx context.Context, blobs Blobs, d events.Digest) (Manifest, error) {
	if err := d.Validate("digest"); err != nil {
		return Manifest{}, fmt.Errorf("load manifest: %w", err)
	}
	b, err := blobs.Get(ctx, d)
	if err != nil {
		return Manifest{}, fmt.Errorf("load manifest %s: %w", d, err)
	}
	if got := events.DigestOf(b); got != d {
		return Manifest{}, fmt.Errorf("load manifest %s: %w: the store returned bytes with digest %s", d, ErrCorrupt, got)
	}
	m, err := DecodeManifest(b)
	if err != nil {
		return Manifest{}, fmt.Errorf("load manifest %s: %w", d, err)
	}
	return m, nil
}

// validateEntries checks sorted entries: fields, paths, no duplicates and no
// entry below another entry (only directories with nothing recorded below
// them are entries, so nothing may be below any entry).
func validateEntries(es []Entry) error {
	paths := make(map[string]struct{}, len(es))
	for i, e := range es {
		if err := validateEntry(e); err != nil {
			return err
		}
		if i > 0 && es[i-1].Path == e.Path {
			return fmt.Errorf("%w: %w", ErrBadManifest, pathErr(e.Path, ErrBadManifest, "recorded twice"))
		}
		paths[e.Path] = struct{}{}
	}
	for _, e := range es {
		for i := 0; i < len(e.Path); i++ {
			if e.Path[i] != '/' {
				continue
			}
			if _, ok := paths[e.Path[:i]]; ok {
				return fmt.Errorf("%w: %w", ErrBadManifest,
					pathErr(e.Path, ErrInvalidPath, "lies below the entry %q, which is not a directory with entries", e.Path[:i]))
			}
		}
	}
	return nil
}

func validateEntry(e Entry) error {
	bad := func(format string, args ...any) error {
		return pathErr(e.Path, ErrBadManifest, format, args...)
	}
	if err := checkManifestPath(e.Path); err != nil {
		return fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if !e.Kind.valid() {
		return bad("unknown kind %q", e.Kind)
	}
	if e.Size < 0 {
		return bad("negative size %d", e.Size)
	}
	switch e.Kind {
	case KindFile, KindExec:
		if err := e.Digest.Validate("digest"); err != nil {
			return bad("%v", err)
		}
		if e.Target != "" {
			return bad("a file has no target")
		}
	case KindSymlink:
		if e.Target == "" || strings.IndexByte(e.Target, 0) >= 0 {
			return bad("a symlink target must be non-empty and free of NUL bytes")
		}
		if e.Size != int64(len(e.Target)) {
			return bad("symlink size %d is not the target's length %d", e.Size, len(e.Target))
		}
		if e.Digest != "" {
			return bad("a symlink has no digest")
		}
	case KindDir:
		if e.Size != 0 || e.Digest != "" || e.Target != "" {
			return bad("a directory has no size, digest or target")
		}
	}
	return nil
}

// checkManifestPath checks a relative, slash-separated path: non-empty, no
// NUL, no leading or doubled or trailing slash, no "." or ".." component.
// ".." components and absolute paths are escapes; the rest are malformed.
func checkManifestPath(p string) error {
	if p == "" {
		return pathErr(p, ErrInvalidPath, "empty path")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return pathErr(p, ErrInvalidPath, "contains a NUL byte")
	}
	if p[0] == '/' {
		return pathErr(p, ErrEscape, "absolute path")
	}
	for c := range strings.SplitSeq(p, "/") {
		switch c {
		case "..":
			return pathErr(p, ErrEscape, "has a \"..\" component")
		case "", ".":
			return pathErr(p, ErrInvalidPath, "has an empty or \".\" component")
		}
	}
	return nil
}

// mustEscape reports whether the encoding writes c as %XX.
func mustEscape(c byte) bool { return c <= ' ' || c == '%' || c == 0x7f }

const upperHex = "0123456789ABCDEF"

func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mustEscape(c) {
			b = append(b, '%', upperHex[c>>4], upperHex[c&0xf])
		} else {
			b = append(b, c)
		}
	}
	return b
}

func unescape(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		for i := 0; i < len(s); i++ {
			if mustEscape(s[i]) {
				return "", fmt.Errorf("byte 0x%02X must be escaped", s[i])
			}
		}
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if mustEscape(c) {
				return "", fmt.Errorf("byte 0x%02X must be escaped", c)
			}
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated escape at byte %d", i)
		}
		hi, lo := strings.IndexByte(upperHex, s[i+1]), strings.IndexByte(upperHex, s[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("escape %q is not two uppercase hex digits", s[i:i+3])
		}
		v := byte(hi<<4 | lo)
		if !mustEscape(v) {
			return "", fmt.Errorf("escape %q encodes a byte that is written as itself", s[i:i+3])
		}
		b = append(b, v)
		i += 2
	}
	return string(b), nil
}
