package events

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Unions travel as one flat msgpack map: a "type" key naming the variant,
// then the variant's own fields. A reader in any language dispatches on
// "type" and reads the rest as an ordinary map.

const unionTypeKey = "type"

// variant is implemented by every variant struct of every union.
type variant interface{ variantType() string }

// unknownVariant keeps a discriminator the reader did not admit, so Validate
// can report it with the field's full path instead of msgpack failing
// mid-struct with no context.
type unknownVariant struct{ name string }

func (u unknownVariant) variantType() string { return u.name }

// encodeUnion writes v as a map whose first key is "type".
func encodeUnion(enc *msgpack.Encoder, v variant) error {
	if v == nil {
		return enc.EncodeNil()
	}
	if u, ok := v.(unknownVariant); ok {
		return fmt.Errorf("cannot encode unknown variant %q", u.name)
	}
	p, err := encodePooled(v)
	if err != nil {
		return err
	}
	defer p.release()
	n, rest, err := splitMapHeader(p.buf.Bytes())
	if err != nil {
		return err
	}
	if err := enc.EncodeMapLen(n + 1); err != nil {
		return err
	}
	if err := enc.EncodeString(unionTypeKey); err != nil {
		return err
	}
	if err := enc.EncodeString(v.variantType()); err != nil {
		return err
	}
	_, err = enc.Writer().Write(rest)
	return err
}

// splitMapHeader returns the entry count of an encoded msgpack map and the
// bytes after its header.
func splitMapHeader(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, fmt.Errorf("empty variant encoding")
	}
	switch c := b[0]; {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), b[1:], nil
	case c == 0xde && len(b) >= 3:
		return int(binary.BigEndian.Uint16(b[1:3])), b[3:], nil
	case c == 0xdf && len(b) >= 5:
		return int(binary.BigEndian.Uint32(b[1:5])), b[5:], nil
	}
	return 0, nil, fmt.Errorf("variant did not encode as a map")
}

// decodeUnion reads a tagged map and returns the variant built by the table
// entry its "type" names, or unknownVariant when the name is not admitted.
// A nil on the wire decodes to a nil variant (reported as missing).
func decodeUnion(dec *msgpack.Decoder, table map[string]func() variant) (variant, error) {
	raw, err := rawValue(dec)
	if err != nil {
		return nil, err
	}
	if len(raw) == 1 && raw[0] == 0xc0 {
		return nil, nil
	}
	mk, name, err := variantMaker(raw, table)
	if err != nil {
		return nil, err
	}
	if mk == nil {
		return unknownVariant{name: name}, nil
	}
	v := mk()
	// The variant's struct decoder skips the "type" key as unknown.
	if err := unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("variant %q: %w", v.variantType(), err)
	}
	// The table hands out pointers so msgpack can fill them; callers keep
	// values so that unions compare and copy like plain data.
	return deref(v), nil
}

// variantMaker returns the table entry an encoded union's "type" names,
// or nil and the name when the table has none.
func variantMaker(raw []byte, table map[string]func() variant) (func() variant, string, error) {
	if b, ok := leadingType(raw); ok {
		if mk, ok := table[string(b)]; ok { // a lookup by bytes copies nothing
			return mk, "", nil
		}
		return nil, string(b), nil
	}
	// "type" is not the first key: find it the slow way.
	var head struct {
		Type string `msgpack:"type"`
	}
	if err := unmarshal(raw, &head); err != nil {
		return nil, "", err
	}
	return table[head.Type], head.Type, nil
}

// leadingType reads the discriminator of an encoded union when its first
// key is "type" with a short string value, as factline writes it.
func leadingType(raw []byte) ([]byte, bool) {
	_, rest, err := splitMapHeader(raw)
	if err != nil || len(rest) < 6 || string(rest[:5]) != "\xa4type" {
		return nil, false
	}
	rest = rest[5:]
	var n int
	switch c := rest[0]; {
	case c >= 0xa0 && c <= 0xbf: // fixstr
		n, rest = int(c&0x1f), rest[1:]
	case c == 0xd9 && len(rest) >= 2: // str8
		n, rest = int(rest[1]), rest[2:]
	default:
		return nil, false
	}
	if len(rest) < n {
		return nil, false
	}
	return rest[:n], true
}

// validateUnion checks that a union holds an admitted variant.
func validateUnion(path string, v variant, admitted []string) error {
	switch u := v.(type) {
	case nil:
		return missing(join(path, unionTypeKey))
	case unknownVariant:
		if u.name == "" {
			return missing(join(path, unionTypeKey))
		}
		return &FieldError{Field: join(path, unionTypeKey),
			Reason: fmt.Sprintf("unknown variant %q (want one of %v)", u.name, admitted),
			Err:    ErrUnknownVariant}
	}
	if vv, ok := v.(validator); ok {
		return vv.validate(path)
	}
	return nil
}

// marshal encodes v the way every fact is encoded: compact integers, struct
// fields in declaration order, so equal facts give equal bytes.
func marshal(v any) ([]byte, error) {
	p, err := encodePooled(v)
	if err != nil {
		return nil, err
	}
	defer p.release()
	return bytes.Clone(p.buf.Bytes()), nil
}

// encoders reuse msgpack encoders and their buffers: every append encodes a
// fact, and a fact with unions encodes each union's variant on its own, so
// a fresh encoder per value was most of the allocations of an append.
var encoders = sync.Pool{New: func() any {
	p := &pooledEncoder{}
	p.enc = msgpack.NewEncoder(&p.buf)
	p.enc.UseCompactInts(true)
	p.enc.SetSortMapKeys(true)
	return p
}}

type pooledEncoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// maxPooledBuffer keeps a rare huge fact from pinning its buffer in the pool.
const maxPooledBuffer = 64 << 10

// encodePooled encodes v into a pooled buffer; the caller reads p.buf and
// then releases p.
func encodePooled(v any) (*pooledEncoder, error) {
	p := encoders.Get().(*pooledEncoder)
	p.buf.Reset()
	if err := p.enc.Encode(v); err != nil {
		p.release()
		return nil, err
	}
	return p, nil
}

func (p *pooledEncoder) release() {
	if p.buf.Cap() > maxPooledBuffer {
		return
	}
	encoders.Put(p)
}

// deref turns the *T a union table allocates into the T unions hold.
func deref(v variant) variant {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		return rv.Elem().Interface().(variant)
	}
	return v
}

// unionSpec describes one union: the variants it admits, by wire name.
type unionSpec interface {
	variants() map[string]func() variant
	names() []string
}

// union holds one variant of the union S. The exported union types embed it,
// which gives each of them the codec and validation below.
type union[S unionSpec] struct{ v variant }

// Variant returns the held variant struct for a type switch, or nil for the
// zero value.
func (u union[S]) Variant() any { return u.v }

// Type returns the wire discriminator of the held variant ("" if none).
func (u union[S]) Type() string {
	if u.v == nil {
		return ""
	}
	return u.v.variantType()
}

func (u union[S]) validate(p string) error {
	var s S
	return validateUnion(p, u.v, s.names())
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (u union[S]) EncodeMsgpack(enc *msgpack.Encoder) error { return encodeUnion(enc, u.v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (u *union[S]) DecodeMsgpack(dec *msgpack.Decoder) (err error) {
	var s S
	u.v, err = decodeUnion(dec, s.variants())
	return err
}
