package events

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// wireIn is the envelope being read, in any version (docs/facts.md): a
// version 1 map with snake_case keys or a version 2, 3 or 4 array
// (envelope2.go).
// It decodes itself field by field, keeping the body raw until the kind is
// known.
type wireIn struct {
	envelope       int // EnvelopeV1 to EnvelopeV4
	ID             string
	Kind           Kind
	Schema         uint16
	Suite          string
	Run            string
	TaskGeneration uint32
	Position       uint64
	Causation      string
	Producer       Producer
	At             *time.Time // a pointer: msgpack v5.4.1 panics decoding nil into a time.Time
	// atNanos is the time as versions 2 to 4 write it (Unix nanoseconds),
	// kept as a number so that reading it allocates nothing.
	atNanos   int64
	nanosRead bool
	rawBody   []byte // the body's bytes where they lie (rawValue), or in keys
	hasBody   bool
	// id is the ID as read from versions 2 to 4 (16 bytes), which needs
	// no parsing; ID holds version 1's string.
	id      ulid.ULID
	idBytes bool
	// keys holds a version 3 or 4 body rewritten to named keys; Decode returns it
	// to the pool once the body is decoded.
	keys *keyBuffer
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (w *wireIn) DecodeMsgpack(dec *msgpack.Decoder) error {
	code, err := dec.PeekCode()
	if err != nil {
		return err
	}
	if code >= 0x90 && code <= 0x9f || code == 0xdc || code == 0xdd { // an array
		return w.decodeV2(dec)
	}
	w.envelope = EnvelopeV1
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("fact is nil, not a map")
	}
	for range n {
		key, err := dec.DecodeString()
		if err != nil {
			return err
		}
		switch key {
		case "id":
			err = dec.Decode(&w.ID)
		case "kind":
			err = dec.Decode(&w.Kind)
		case "schema":
			err = dec.Decode(&w.Schema)
		case "suite":
			err = dec.Decode(&w.Suite)
		case "run":
			err = dec.Decode(&w.Run)
		case "task_generation":
			err = dec.Decode(&w.TaskGeneration)
		case "position":
			err = dec.Decode(&w.Position)
		case "causation":
			err = dec.Decode(&w.Causation)
		case "producer":
			err = dec.Decode(&w.Producer)
		case "at":
			err = dec.Decode(&w.At)
		case "body":
			err = w.decodeBody(dec)
		default:
			err = dec.Skip() // a field from a newer writer
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

func (w *wireIn) decodeBody(dec *msgpack.Decoder) error {
	if code, err := dec.PeekCode(); err != nil {
		return err
	} else if code == 0xc0 { // nil
		return dec.Skip()
	}
	// Walk the body whole first: that proves every length it declares is
	// backed by bytes, so decoding it cannot be talked into a huge
	// allocation (msgpack v5.4.1 preallocates slices by declared length).
	raw, err := rawValue(dec)
	if err != nil {
		return err
	}
	w.hasBody, w.rawBody = true, raw
	return nil
}

// Encode returns the wire form of a fact that stands alone, in envelope
// version 3, which holds the fact's suite and run (Decode reads every
// version but 4). It does not validate: facts are validated where they are
// made (NewFact) and where they are read (Decode).
func Encode(f Fact) ([]byte, error) { return encode(f, EnvelopeV3) }

// EncodeStored returns the wire form of a fact to be stored on its subject
// (Fact.Subject), in envelope version 4: version 3 without the suite and
// the run, which the subject names. Only DecodeStored, given that subject,
// reads it back. Like Encode, it does not validate.
func EncodeStored(f Fact) ([]byte, error) { return encode(f, EnvelopeV4) }

func encode(f Fact, version uint8) ([]byte, error) {
	if f.Body == nil {
		return nil, missing("body")
	}
	b, err := marshal(envelope2{&f, version})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", f.Kind(), err)
	}
	return b, nil
}

// Decode parses and validates one fact. Unknown fields are ignored (so newer
// writers can add optional fields); an unknown kind, a newer schema version,
// an unknown union variant or a missing required field is an error that
// names what is wrong. A fact in envelope version 4 names no suite and run
// of its own: Decode refuses it (ErrNeedsSubject) rather than make them up,
// and DecodeStored, given its subject, reads it.
func Decode(data []byte) (Fact, error) { return decode(data, nil) }

// subjectIDs are the suite and run of the subject a message was stored
// on, which a version 4 fact takes as its own.
type subjectIDs struct{ suite, run string }

func decode(data []byte, ids *subjectIDs) (f Fact, err error) {
	defer func() {
		// The decoder sees bytes from anywhere; a panic deep in reflection
		// must become a refusal, not a crashed consumer.
		if r := recover(); r != nil {
			f, err = Fact{}, &FieldError{Field: "fact", Reason: fmt.Sprintf("undecodable: %v", r), Err: ErrMalformed}
		}
	}()
	var w wireIn
	defer func() { w.keys.release() }() // after the body is decoded from it
	if err := unmarshal(data, &w); err != nil {
		return Fact{}, &FieldError{Field: "fact", Reason: fmt.Sprintf("not a msgpack fact: %v", err), Err: ErrMalformed}
	}
	if w.envelope == EnvelopeV4 {
		if ids == nil {
			return Fact{}, &FieldError{Kind: w.Kind, Field: "subject",
				Reason: "envelope version 4 leaves the suite and the run to the subject the fact is stored on, and none was given",
				Err:    ErrNeedsSubject}
		}
		w.Suite, w.Run = ids.suite, ids.run
	}
	if w.Kind == "" {
		return Fact{}, missing("kind")
	}
	spec, ok := kinds[w.Kind]
	if !ok {
		return Fact{}, &FieldError{Field: "kind", Reason: fmt.Sprintf("unknown kind %q", w.Kind), Err: ErrUnknownKind}
	}
	if w.Schema > spec.version {
		return Fact{}, &FieldError{Kind: w.Kind, Field: "schema",
			Reason: fmt.Sprintf("version %d is newer than this reader's %d", w.Schema, spec.version),
			Err:    ErrUnsupportedVersion}
	}
	id, err := w.ulid()
	if err != nil {
		return Fact{}, withKind(w.Kind, err)
	}
	if !w.hasBody {
		return Fact{}, withKind(w.Kind, missing("body"))
	}
	bp := spec.new()
	if err := unmarshal(w.rawBody, bp); err != nil {
		return Fact{}, &FieldError{Kind: w.Kind, Field: "body", Reason: fmt.Sprintf("undecodable: %v", err), Err: ErrMalformed}
	}
	f = Fact{
		ID:             id,
		Schema:         w.Schema,
		Suite:          w.Suite,
		Run:            w.Run,
		TaskGeneration: w.TaskGeneration,
		Position:       w.Position,
		Causation:      w.Causation,
		Producer:       w.Producer,
		At:             w.at(),
		Body:           derefBody(bp),
	}
	if err := f.Validate(); err != nil {
		return Fact{}, err
	}
	return f, nil
}

// ulid returns the fact's ID, parsed when it was written as a string.
func (w *wireIn) ulid() (ulid.ULID, error) {
	if w.idBytes {
		return w.id, nil
	}
	if w.ID == "" {
		return ulid.ULID{}, missing("id")
	}
	id, err := ulid.ParseStrict(w.ID)
	if err != nil {
		return ulid.ULID{}, invalid("id", "not a ULID: %v", err)
	}
	return id, nil
}

// at returns the envelope time in UTC, or the zero time (refused by
// Validate as missing) when "at" was absent or nil.
func (w *wireIn) at() time.Time {
	switch {
	case w.nanosRead:
		return time.Unix(0, w.atNanos).UTC()
	case w.At != nil:
		return w.At.UTC()
	}
	return time.Time{}
}

// derefBody turns the *Body the registry allocates into the value bodies
// callers switch on.
func derefBody(p any) Body { return reflect.ValueOf(p).Elem().Interface().(Body) }

// decoders reuse msgpack decoders and their readers: Decode runs for every
// fact every service and replay reads.
var decoders = sync.Pool{New: func() any {
	p := &pooledDecoder{}
	p.dec = msgpack.NewDecoder(&p.r)
	return p
}}

type pooledDecoder struct {
	r   sliceReader
	dec *msgpack.Decoder
}

// sliceReader is the reader of a pooled decoder: it keeps the slice it
// reads, so that rawValue can hand out a value's bytes without copying.
type sliceReader struct {
	bytes.Reader
	data []byte
}

func (s *sliceReader) reset(data []byte) {
	s.data = data
	s.Reader.Reset(data)
}

// unmarshal decodes one msgpack value from data into v.
func unmarshal(data []byte, v any) error {
	p := decoders.Get().(*pooledDecoder)
	p.r.reset(data)
	p.dec.Reset(&p.r)
	err := p.dec.Decode(v)
	p.dec.Reset(nil)
	p.r.reset(nil)
	decoders.Put(p)
	return err
}

// rawValue returns the encoded bytes of the next value and moves dec past
// them, having checked that every length inside is backed by bytes
// (valueSize). When dec is one unmarshal lent out, the bytes are a window
// on the slice it decodes, not a copy: they are valid as long as that
// slice is, which for every caller here is the rest of one Decode.
func rawValue(dec *msgpack.Decoder) ([]byte, error) {
	s, ok := dec.Buffered().(*sliceReader)
	if !ok {
		return dec.DecodeRaw() // a decoder of msgpack.Unmarshal's, not ours
	}
	off := len(s.data) - s.Len()
	n, err := valueSize(s.data[off:])
	if err != nil {
		return nil, err
	}
	if _, err := s.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, fmt.Errorf("skip a value of %d bytes: %w", n, err)
	}
	return s.data[off : off+n : off+n], nil
}

// keyBuffer holds a version 3 body rewritten to named keys while Decode
// reads it: a buffer a fact, from a pool, instead of a new one.
type keyBuffer struct{ b []byte }

var keyBuffers = sync.Pool{New: func() any { return &keyBuffer{b: make([]byte, 0, 1024)} }}

// namedKeys rewrites a version 3 body to named keys in a pooled buffer,
// which release returns.
func namedKeys(body []byte) (*keyBuffer, []byte, error) {
	k := keyBuffers.Get().(*keyBuffer)
	b, err := appendKeys(k.b[:0], body)
	if err != nil {
		keyBuffers.Put(k)
		return nil, nil, err
	}
	k.b = b
	return k, b, nil
}

// release returns the buffer to the pool (a nil buffer is none), unless a
// rare huge body grew it.
func (k *keyBuffer) release() {
	if k == nil || cap(k.b) > maxPooledBuffer {
		return
	}
	keyBuffers.Put(k)
}
