// Package blobdelta stores a version of a blob as what it shares with an
// earlier version (its base) and the bytes that are new: the common prefix
// and suffix are counted, only the middle is kept. A model request grows by
// its newest messages from one turn to the next, between an unchanged
// start (the earlier messages) and an unchanged end (tools, settings), so a
// turn's request stored this way costs what the turn added, not the whole
// history again.
//
// The package is pure: it encodes, decodes and applies deltas; where they
// are stored, and how a base is found by its name, is the caller's.
package blobdelta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// magic starts every encoded delta, with the format's version in its last
// byte.
var magic = []byte("FLD\x01")

// ErrMalformed is wrapped by every error about bytes that are not a delta
// or a delta that does not fit its base.
var ErrMalformed = errors.New("malformed blob delta")

// maxName bounds a base's name: a digest's text is 71 bytes.
const maxName = 256

// Delta is a blob written as its base's first Prefix bytes, then Middle,
// then its base's last Suffix bytes.
type Delta struct {
	// Base names the blob this one is made from (a content digest).
	Base string
	// Prefix and Suffix are how many bytes the blob shares with its base
	// at its start and at its end; they never overlap in either.
	Prefix, Suffix uint64
	// Middle is the blob's bytes between the two.
	Middle []byte
}

// Make returns full as a delta of base, named baseName: the longest common
// prefix, then the longest common suffix of what remains of both.
func Make(baseName string, base, full []byte) Delta {
	n := min(len(base), len(full))
	p := 0
	for p < n && base[p] == full[p] {
		p++
	}
	s := 0
	for s < n-p && base[len(base)-1-s] == full[len(full)-1-s] {
		s++
	}
	return Delta{Base: baseName, Prefix: uint64(p), Suffix: uint64(s), Middle: full[p : len(full)-s]}
}

// Size is the length of the blob the delta makes.
func (d Delta) Size() uint64 { return d.Prefix + uint64(len(d.Middle)) + d.Suffix }

// Encode returns the delta's stored form: the magic, the base's name
// (length first), the prefix and suffix lengths (unsigned varints), then
// the middle bytes to the end.
func (d Delta) Encode() []byte {
	out := make([]byte, 0, len(magic)+3*binary.MaxVarintLen64+len(d.Base)+len(d.Middle))
	out = append(out, magic...)
	out = binary.AppendUvarint(out, uint64(len(d.Base)))
	out = append(out, d.Base...)
	out = binary.AppendUvarint(out, d.Prefix)
	out = binary.AppendUvarint(out, d.Suffix)
	return append(out, d.Middle...)
}

// Decode reads a delta's stored form. The delta's Middle aliases data.
func Decode(data []byte) (Delta, error) {
	if !bytes.HasPrefix(data, magic) {
		return Delta{}, fmt.Errorf("%w: does not start with %q", ErrMalformed, magic)
	}
	rest := data[len(magic):]
	field := func(name string) (uint64, error) {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, fmt.Errorf("%w: bad %s at byte %d", ErrMalformed, name, len(data)-len(rest))
		}
		rest = rest[n:]
		return v, nil
	}
	nameLen, err := field("base name length")
	if err != nil {
		return Delta{}, err
	}
	if nameLen == 0 || nameLen > maxName || nameLen > uint64(len(rest)) {
		return Delta{}, fmt.Errorf("%w: base name length %d (of %d bytes left, at most %d)", ErrMalformed, nameLen, len(rest), maxName)
	}
	d := Delta{Base: string(rest[:nameLen])}
	rest = rest[nameLen:]
	if d.Prefix, err = field("prefix length"); err != nil {
		return Delta{}, err
	}
	if d.Suffix, err = field("suffix length"); err != nil {
		return Delta{}, err
	}
	d.Middle = rest
	return d, nil
}

// Apply returns the blob the delta makes from base, its base's bytes. It
// fails when the prefix and suffix do not fit in base.
func (d Delta) Apply(base []byte) ([]byte, error) {
	if d.Prefix > uint64(len(base)) || d.Suffix > uint64(len(base))-d.Prefix {
		return nil, fmt.Errorf("%w: prefix %d and suffix %d do not fit a base of %d bytes (%s)", ErrMalformed, d.Prefix, d.Suffix, len(base), d.Base)
	}
	out := make([]byte, 0, d.Size())
	out = append(out, base[:d.Prefix]...)
	out = append(out, d.Middle...)
	return append(out, base[uint64(len(base))-d.Suffix:]...), nil
}
