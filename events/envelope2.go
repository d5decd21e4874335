package events

import (
	"fmt"
	"math"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// Envelope versions. Version 1 is a msgpack map keyed by field names;
// version 2 is a msgpack array of the envelope's fields in a fixed order,
// with the ID and the causation as 16 raw bytes, the kind and the
// producer's role as numbers (wirecodes.go), the time as Unix nanoseconds,
// and digests in the body as binary (digestwire.go). Version 3, which
// Encode writes, is version 2's array with the body's map keys written as
// numbers (keycodes.go, bodykeys.go). Version 4, which EncodeStored writes
// for a fact stored on its subject, is version 3's array without the suite
// and the run: the subject names them, so a reader takes them from there
// (DecodeStored) and a reader without a subject refuses the fact
// (ErrNeedsSubject). A reader tells a map from an array by the first byte,
// and the array versions apart by the array's first element.
const (
	EnvelopeV1 = 1
	EnvelopeV2 = 2
	EnvelopeV3 = 3
	EnvelopeV4 = 4
)

// The positions of the array of versions 2 and 3. Readers take at least
// v2Fields elements and skip any after them (fields a newer writer
// appended). Version 4 leaves out v2Suite and v2Run: its element i is
// version 3's element v4Position(i), and it has at least v4Fields.
const (
	v2Version = iota
	v2ID
	v2Kind
	v2Schema
	v2Suite
	v2Run
	v2TaskGeneration
	v2Position
	v2Causation
	v2Service
	v2Instance
	v2At
	v2Body
	v2Fields
)

// v4Fields is how many elements a version 4 array has at least: version
// 3's without the suite and the run.
const v4Fields = v2Fields - 2

// v4Position is the version 3 position of a version 4 array's element i.
func v4Position(i int) int {
	if i >= v2Suite {
		return i + 2
	}
	return i
}

// envelope2 is a fact on the wire in version 2, 3 or 4 (version).
type envelope2 struct {
	f       *Fact
	version uint8
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (e envelope2) EncodeMsgpack(enc *msgpack.Encoder) error {
	f := e.f
	n := v2Fields
	if e.version == EnvelopeV4 {
		n = v4Fields
	}
	if err := enc.EncodeArrayLen(n); err != nil {
		return err
	}
	if err := enc.EncodeUint(uint64(e.version)); err != nil {
		return err
	}
	if err := enc.EncodeBytes(f.ID[:]); err != nil {
		return err
	}
	if err := encodeCode(enc, kindCodes[f.Kind()], string(f.Kind())); err != nil {
		return err
	}
	if err := enc.EncodeUint(uint64(f.Schema)); err != nil {
		return err
	}
	if e.version != EnvelopeV4 {
		if err := enc.EncodeString(f.Suite); err != nil {
			return err
		}
		if err := enc.EncodeString(f.Run); err != nil {
			return err
		}
	}
	if err := enc.EncodeUint(uint64(f.TaskGeneration)); err != nil {
		return err
	}
	if err := enc.EncodeUint(f.Position); err != nil {
		return err
	}
	if err := encodeCausation(enc, f.Causation); err != nil {
		return err
	}
	if err := encodeCode(enc, ownerCodes[f.Producer.Service], string(f.Producer.Service)); err != nil {
		return err
	}
	if err := enc.EncodeString(f.Producer.Instance); err != nil {
		return err
	}
	if err := encodeAt(enc, f.At); err != nil {
		return err
	}
	if e.version == EnvelopeV2 {
		return enc.Encode(f.Body)
	}
	return encodeCodedBody(enc, f.Body)
}

// encodeCodedBody writes a body as versions 3 and 4 do: its map keys as
// numbers.
func encodeCodedBody(enc *msgpack.Encoder, body Body) error {
	p, err := encodePooled(body)
	if err != nil {
		return err
	}
	defer p.release()
	b, err := keysToCodes(p.buf.Bytes())
	if err != nil {
		return err
	}
	_, err = enc.Writer().Write(b)
	return err
}

// Unix nanoseconds in an int64 reach from 1677 to 2262; a time outside
// them (never one a clock gives, but a fact may say it) is written as the
// msgpack timestamp extension, as version 1 wrote every time.
var (
	minNanoTime = time.Unix(0, math.MinInt64)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

func encodeAt(enc *msgpack.Encoder, t time.Time) error {
	if t.Before(minNanoTime) || t.After(maxNanoTime) {
		return enc.EncodeTime(t)
	}
	return enc.EncodeInt(t.UnixNano())
}

// encodeCode writes a kind's or a role's number, or its name when it has
// none (a fact that validation refuses anyway keeps what it said).
func encodeCode(enc *msgpack.Encoder, code uint8, name string) error {
	if code == 0 {
		return enc.EncodeString(name)
	}
	return enc.EncodeUint(uint64(code))
}

// encodeCausation writes a causation ULID as 16 bytes, nil when there is
// none, and the string itself when it is no ULID (which validation names).
func encodeCausation(enc *msgpack.Encoder, c string) error {
	if c == "" {
		return enc.EncodeNil()
	}
	id, err := ulid.ParseStrict(c)
	if err != nil || id.String() != c {
		return enc.EncodeString(c)
	}
	return enc.EncodeBytes(id[:])
}

// decodeV2 reads a version 2, 3 or 4 envelope into w, leaving the body raw
// (in version 2's form: keys as names). A version 4 envelope leaves w's
// suite and run empty: its subject holds them.
func (w *wireIn) decodeV2(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("an array envelope has %d fields, want at least %d", n, v4Fields)
	}
	// The version comes first and says how many fields follow, and where.
	if err := w.decodeV2Field(dec, v2Version); err != nil {
		return fmt.Errorf("%s: %w", v2FieldName(v2Version), err)
	}
	want, pos := v2Fields, func(i int) int { return i }
	if w.envelope == EnvelopeV4 {
		want, pos = v4Fields, v4Position
	}
	if n < want {
		return fmt.Errorf("an array envelope of version %d has %d fields, want at least %d", w.envelope, n, want)
	}
	for i := 1; i < n; i++ {
		if err := w.decodeV2Field(dec, pos(i)); err != nil {
			return fmt.Errorf("%s: %w", v2FieldName(pos(i)), err)
		}
	}
	return nil
}

func (w *wireIn) decodeV2Field(dec *msgpack.Decoder, i int) error {
	switch i {
	case v2Version:
		v, err := dec.DecodeUint64()
		if err != nil {
			return err
		}
		if v < EnvelopeV2 || v > EnvelopeV4 {
			return fmt.Errorf("an array envelope is version 2, 3 or 4, this one says %d", v)
		}
		w.envelope = int(v)
	case v2ID:
		if err := decodeULIDBytes(dec, &w.id); err != nil {
			return err
		}
		w.idBytes = true
	case v2Kind:
		name, err := decodeCode(dec, func(c uint64) (string, bool) {
			if c == 0 || c >= uint64(len(kindByCode)) || kindByCode[c] == "" {
				return "", false
			}
			return string(kindByCode[c]), true
		})
		if err != nil {
			return err
		}
		w.Kind = Kind(name)
	case v2Schema:
		return dec.Decode(&w.Schema)
	case v2Suite:
		return dec.Decode(&w.Suite)
	case v2Run:
		return dec.Decode(&w.Run)
	case v2TaskGeneration:
		return dec.Decode(&w.TaskGeneration)
	case v2Position:
		return dec.Decode(&w.Position)
	case v2Causation:
		code, err := dec.PeekCode()
		if err != nil {
			return err
		}
		if code == 0xc0 {
			return dec.Skip()
		}
		if !isBinCode(code) {
			return dec.Decode(&w.Causation)
		}
		var id ulid.ULID
		if err := decodeULIDBytes(dec, &id); err != nil {
			return err
		}
		w.Causation = id.String()
	case v2Service:
		name, err := decodeCode(dec, func(c uint64) (string, bool) {
			if c == 0 || c >= uint64(len(ownerByCode)) || ownerByCode[c] == "" {
				return "", false
			}
			return string(ownerByCode[c]), true
		})
		if err != nil {
			return err
		}
		w.Producer.Service = Owner(name)
	case v2Instance:
		return dec.Decode(&w.Producer.Instance)
	case v2At:
		code, err := dec.PeekCode()
		if err != nil {
			return err
		}
		if code == 0xc0 {
			return dec.Skip() // Validate names the missing time
		}
		if isExtCode(code) {
			return dec.Decode(&w.At)
		}
		ns, err := dec.DecodeInt64()
		if err != nil {
			return err
		}
		w.atNanos, w.nanosRead = ns, true
	case v2Body:
		if err := w.decodeBody(dec); err != nil || !w.hasBody || w.envelope == EnvelopeV2 {
			return err
		}
		k, b, err := namedKeys(w.rawBody)
		if err != nil {
			return err
		}
		w.keys, w.rawBody = k, b
	default:
		return dec.Skip() // a field a newer writer appended
	}
	return nil
}

// v2FieldName names a version 2 position in errors, as version 1 keys it.
func v2FieldName(i int) string {
	names := [...]string{"envelope", "id", "kind", "schema", "suite", "run", "task_generation",
		"position", "causation", "producer.service", "producer.instance", "at", "body"}
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("field %d", i)
}

// decodeULIDBytes reads a ULID written as 16 raw bytes into id.
func decodeULIDBytes(dec *msgpack.Decoder, id *ulid.ULID) error {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return err
	}
	if n != len(ulid.ULID{}) {
		return fmt.Errorf("a ULID is 16 bytes, got %d", n)
	}
	return dec.ReadFull(id[:])
}

// decodeCode reads a number and names it with lookup, or a name written as
// a string. A number lookup does not know becomes the name "code N", which
// validation then refuses as an unknown kind or role, naming the number.
func decodeCode(dec *msgpack.Decoder, lookup func(uint64) (string, bool)) (string, error) {
	code, err := dec.PeekCode()
	if err != nil {
		return "", err
	}
	if isStrCode(code) {
		return dec.DecodeString()
	}
	c, err := dec.DecodeUint64()
	if err != nil {
		return "", err
	}
	if name, ok := lookup(c); ok {
		return name, nil
	}
	return fmt.Sprintf("code %d", c), nil
}

// isStrCode reports whether a msgpack type byte starts a str value.
func isStrCode(c byte) bool { return c >= 0xa0 && c <= 0xbf || c == 0xd9 || c == 0xda || c == 0xdb }

// isExtCode reports whether a msgpack type byte starts an ext value.
func isExtCode(c byte) bool { return c >= 0xd4 && c <= 0xd8 || c >= 0xc7 && c <= 0xc9 }
