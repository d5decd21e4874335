package events

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// A body in envelope version 3 is the same msgpack tree as in version 2,
// except that every map key bodyKeys numbers is written as that number. The
// rewrite works on the encoded bytes in both directions, so that the body
// types, their custom encoders (unions, digests) and the checks the decoder
// makes stay exactly those of version 2. Bodies hold no maps of their own
// with integer keys, so a number in a key's place is always a table key.

// maxBodyDepth bounds how deeply a body's maps and arrays may nest while
// its keys are rewritten: no fact's body nests more than a few levels, and
// a forged one must not exhaust the stack.
const maxBodyDepth = 64

// keysToCodes rewrites an encoded body's keys as their numbers.
func keysToCodes(body []byte) ([]byte, error) {
	r := rekeyer{src: body, mode: toCodes, dst: make([]byte, 0, len(body))}
	return r.all()
}

// codesToKeys rewrites an encoded version 3 body's numbered keys as their
// names, the body version 2 would have written. A number the table does
// not hold (a key a newer writer added) becomes the name "#<number>",
// which no field has, so it is skipped as any unknown field is.
func codesToKeys(body []byte) ([]byte, error) {
	return appendKeys(make([]byte, 0, len(body)+len(body)/2), body)
}

// appendKeys is codesToKeys appending to dst, so that a decoder can reuse
// one buffer for every body it reads.
func appendKeys(dst, body []byte) ([]byte, error) {
	r := rekeyer{src: body, mode: toKeys, dst: dst}
	return r.all()
}

// valueSize returns the size of the one encoded value b starts with,
// checking on the way that every length it declares is backed by bytes and
// that it nests no deeper than maxBodyDepth. Decoding then reads the value
// where it lies instead of a copy (rawValue).
func valueSize(b []byte) (int, error) {
	r := rekeyer{src: b, mode: walk}
	if err := r.one(); err != nil {
		return 0, err
	}
	return r.p, nil
}

// unknownKeyName names a key number the table does not hold.
func unknownKeyName(c uint64) string { return "#" + strconv.FormatUint(c, 10) }

// rekeyMode says what a rekeyer writes as it walks.
type rekeyMode uint8

const (
	walk    rekeyMode = iota // nothing: only the walk's checks and its length
	toCodes                  // the value with its keys' names as numbers
	toKeys                   // the value with its keys' numbers as names
)

type rekeyer struct {
	src, dst []byte
	p        int
	mode     rekeyMode
}

func (r *rekeyer) all() ([]byte, error) {
	if err := r.one(); err != nil {
		return nil, err
	}
	if r.p != len(r.src) {
		return nil, fmt.Errorf("body keys: %d bytes after the body", len(r.src)-r.p)
	}
	return r.dst, nil
}

// one walks the value src starts with.
func (r *rekeyer) one() error {
	if err := r.value(0); err != nil {
		return fmt.Errorf("body keys: %w at byte %d", err, r.p)
	}
	return nil
}

// emit writes b to dst unless the walk writes nothing.
func (r *rekeyer) emit(b []byte) {
	if r.mode != walk {
		r.dst = append(r.dst, b...)
	}
}

// value copies one value, rewriting the keys of the maps inside it.
func (r *rekeyer) value(depth int) error {
	if r.p >= len(r.src) {
		return errTruncated
	}
	c := r.src[r.p]
	n, hdr, isMap, ok := container(c)
	if !ok {
		return r.copyScalar()
	}
	if depth >= maxBodyDepth {
		return fmt.Errorf("nested deeper than %d", maxBodyDepth)
	}
	if r.p+hdr > len(r.src) {
		return errTruncated
	}
	switch hdr {
	case 3:
		n = int(binary.BigEndian.Uint16(r.src[r.p+1:]))
	case 5:
		n = int(binary.BigEndian.Uint32(r.src[r.p+1:]))
	}
	r.emit(r.src[r.p : r.p+hdr])
	r.p += hdr
	for range n {
		if isMap {
			if err := r.key(depth); err != nil {
				return err
			}
		}
		if err := r.value(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// container reports whether c opens a map or an array, its length when the
// type byte holds it, and its header's size.
func container(c byte) (n, hdr int, isMap, ok bool) {
	switch {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), 1, true, true
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), 1, false, true
	case c == 0xde:
		return 0, 3, true, true
	case c == 0xdf:
		return 0, 5, true, true
	case c == 0xdc:
		return 0, 3, false, true
	case c == 0xdd:
		return 0, 5, false, true
	}
	return 0, 0, false, false
}

// key copies one map key, rewritten by the table when it is a string (to a
// number) or a number (to a name), as the direction asks. A walk takes any
// key, as msgpack's own skipping does: a field a newer writer added may hold
// a map keyed by anything, and the struct decoder skips it whole.
func (r *rekeyer) key(depth int) error {
	if r.p >= len(r.src) {
		return errTruncated
	}
	start := r.p
	switch r.mode {
	case walk:
		return r.value(depth + 1)
	case toCodes:
		s, ok, err := r.peekString()
		if err != nil {
			return err
		}
		if code, known := bodyKeyCodes[s]; ok && known {
			r.dst = appendUint(r.dst, code)
			return nil
		}
		r.p = start
		return r.copyScalar()
	}
	code, ok, err := r.peekUint()
	if err != nil {
		return err
	}
	if !ok {
		r.p = start
		return r.copyScalar()
	}
	if code > 0 && code < uint64(len(bodyKeys)) {
		r.dst = appendString(r.dst, bodyKeys[code])
		return nil
	}
	// Named only when the table lacks it: formatting every key's number
	// was a third of a replay's renaming.
	r.dst = appendString(r.dst, unknownKeyName(code))
	return nil
}

// peekString reads a str value, reporting false (and reading nothing
// meaningful) when the value is not one.
func (r *rekeyer) peekString() (string, bool, error) {
	c := r.src[r.p]
	var n, hdr int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n, hdr = int(c&0x1f), 1
	case c == 0xd9 && r.p+2 <= len(r.src):
		n, hdr = int(r.src[r.p+1]), 2
	case c == 0xda && r.p+3 <= len(r.src):
		n, hdr = int(binary.BigEndian.Uint16(r.src[r.p+1:])), 3
	default:
		return "", false, nil // longer than any key the table holds
	}
	if r.p+hdr+n > len(r.src) {
		return "", false, errTruncated
	}
	s := string(r.src[r.p+hdr : r.p+hdr+n])
	r.p += hdr + n
	return s, true, nil
}

// peekUint reads an unsigned integer key, reporting false when the value is
// no non-negative integer.
func (r *rekeyer) peekUint() (uint64, bool, error) {
	c := r.src[r.p]
	if c <= 0x7f {
		r.p++
		return uint64(c), true, nil
	}
	var size int
	switch c {
	case 0xcc:
		size = 1
	case 0xcd:
		size = 2
	case 0xce:
		size = 4
	case 0xcf:
		size = 8
	default:
		return 0, false, nil
	}
	if r.p+1+size > len(r.src) {
		return 0, false, errTruncated
	}
	var v uint64
	for _, b := range r.src[r.p+1 : r.p+1+size] {
		v = v<<8 | uint64(b)
	}
	r.p += 1 + size
	return v, true, nil
}

// copyScalar copies one value that is neither a map nor an array.
func (r *rekeyer) copyScalar() error {
	n, err := scalarSize(r.src[r.p:])
	if err != nil {
		return err
	}
	r.emit(r.src[r.p : r.p+n])
	r.p += n
	return nil
}

var errTruncated = errors.New("truncated")

// scalarSize returns the encoded size of the scalar value b starts with.
func scalarSize(b []byte) (int, error) {
	c := b[0]
	fixed := func(n int) (int, error) {
		if n > len(b) {
			return 0, errTruncated
		}
		return n, nil
	}
	// sized reads a length of w bytes after the type byte and adds extra
	// (an ext's type byte) and the header.
	sized := func(w, extra int) (int, error) {
		if 1+w > len(b) {
			return 0, errTruncated
		}
		var n uint64
		for _, x := range b[1 : 1+w] {
			n = n<<8 | uint64(x)
		}
		total := uint64(1+w+extra) + n
		if total > uint64(len(b)) {
			return 0, errTruncated
		}
		return int(total), nil
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return 1, nil
	case c >= 0xa0 && c <= 0xbf:
		return fixed(1 + int(c&0x1f))
	}
	switch c {
	case 0xc4, 0xd9:
		return sized(1, 0)
	case 0xc5, 0xda:
		return sized(2, 0)
	case 0xc6, 0xdb:
		return sized(4, 0)
	case 0xc7:
		return sized(1, 1)
	case 0xc8:
		return sized(2, 1)
	case 0xc9:
		return sized(4, 1)
	case 0xca, 0xce, 0xd2:
		return fixed(5)
	case 0xcb, 0xcf, 0xd3:
		return fixed(9)
	case 0xcc, 0xd0:
		return fixed(2)
	case 0xcd, 0xd1:
		return fixed(3)
	case 0xd4:
		return fixed(3)
	case 0xd5:
		return fixed(4)
	case 0xd6:
		return fixed(6)
	case 0xd7:
		return fixed(10)
	case 0xd8:
		return fixed(18)
	}
	return 0, fmt.Errorf("msgpack type byte %#x is not a value", c)
}

// appendUint appends a non-negative integer in msgpack's shortest form.
func appendUint(b []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(b, byte(v))
	case v <= 0xff:
		return append(b, 0xcc, byte(v))
	default:
		return append(b, 0xcd, byte(v>>8), byte(v))
	}
}

// appendString appends a str value.
func appendString(b []byte, s string) []byte {
	switch n := len(s); {
	case n <= 31:
		b = append(b, 0xa0|byte(n))
	case n <= 0xff:
		b = append(b, 0xd9, byte(n))
	default:
		b = append(b, 0xda, byte(n>>8), byte(n))
	}
	return append(b, s...)
}
