package events

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// wireIn is the envelope being read, in any version (docs/facts.md): a
// version 1 map with snake_case keys or a version 2 or 3 array
// (envelope2.go).
// It decodes itself field by field, keeping the body raw until the kind is
// known.
type wireIn struct {
	envelope       int // EnvelopeV1, EnvelopeV2 or EnvelopeV3
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
	rawBody        msgpack.RawMessage
	hasBody        bool
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
	// Copy the body out first: reading it whole proves every length it
	// declares is backed by bytes, so decoding it cannot be talked into a
	// huge allocation (msgpack v5.4.1 preallocates slices by declared length).
	raw, err := dec.DecodeRaw()
	if err != nil {
		return err
	}
	w.hasBody, w.rawBody = true, raw
	return nil
}

// Encode returns the wire form of a fact, in envelope version 3 (Decode
// reads every version). It does not validate: facts are validated where they
// are made (NewFact) and where they are read (Decode).
func Encode(f Fact) ([]byte, error) {
	if f.Body == nil {
		return nil, missing("body")
	}
	b, err := marshal(envelope2{&f, EnvelopeV3})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", f.Kind(), err)
	}
	return b, nil
}

// Decode parses and validates one fact. Unknown fields are ignored (so newer
// writers can add optional fields); an unknown kind, a newer schema version,
// an unknown union variant or a missing required field is an error that
// names what is wrong.
func Decode(data []byte) (f Fact, err error) {
	defer func() {
		// The decoder sees bytes from anywhere; a panic deep in reflection
		// must become a refusal, not a crashed consumer.
		if r := recover(); r != nil {
			f, err = Fact{}, &FieldError{Field: "fact", Reason: fmt.Sprintf("undecodable: %v", r), Err: ErrMalformed}
		}
	}()
	var w wireIn
	if err := unmarshal(data, &w); err != nil {
		return Fact{}, &FieldError{Field: "fact", Reason: fmt.Sprintf("not a msgpack fact: %v", err), Err: ErrMalformed}
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
	if w.ID == "" {
		return Fact{}, withKind(w.Kind, missing("id"))
	}
	id, err := ulid.ParseStrict(w.ID)
	if err != nil {
		return Fact{}, withKind(w.Kind, invalid("id", "not a ULID: %v", err))
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
		At:             atOrZero(w.At),
		Body:           derefBody(bp),
	}
	if err := f.Validate(); err != nil {
		return Fact{}, err
	}
	return f, nil
}

// atOrZero returns the envelope time in UTC, or the zero time (refused by
// Validate as missing) when "at" was absent or nil.
func atOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
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
	r   bytes.Reader
	dec *msgpack.Decoder
}

// unmarshal decodes one msgpack value from data into v.
func unmarshal(data []byte, v any) error {
	p := decoders.Get().(*pooledDecoder)
	p.r.Reset(data)
	p.dec.Reset(&p.r)
	err := p.dec.Decode(v)
	p.dec.Reset(nil)
	p.r.Reset(nil)
	decoders.Put(p)
	return err
}
