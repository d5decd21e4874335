package events

import (
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// WireMap returns a stored fact's wire form as the keyed map of envelope
// version 1 (docs/facts.md), whichever version it was written in: body keys
// by name, IDs and
// digests as their strings, the kind and the producer's role by name, the
// time as a time.Time. It interprets no more than that, so that tools which
// show facts as they are (factline decode, tail --json) show facts this
// version cannot decode too, and show every version alike. A fact in
// envelope version 4 is refused (ErrNeedsSubject), as Decode refuses it:
// WireMapStored shows it.
func WireMap(data []byte) (map[string]any, error) { return wireMap(data, nil) }

// WireMapStored is WireMap for a message stored on subject: a fact in
// envelope version 4 shows the suite and run the subject names, as
// DecodeStored reads them; on a subject that is no fact subject it is
// refused (ErrNeedsSubject). Other versions show as WireMap shows them,
// their own suite and run whatever the subject says.
func WireMapStored(subject string, data []byte) (map[string]any, error) {
	var ids *subjectIDs
	if suite, run, _, ok := splitSubject(subject); ok {
		ids = &subjectIDs{suite: suite, run: run}
	}
	return wireMap(data, ids)
}

func wireMap(data []byte, ids *subjectIDs) (map[string]any, error) {
	if len(data) > 0 {
		if _, _, isMap, ok := container(data[0]); ok && !isMap {
			a, err := arrayElements(data)
			if err != nil {
				return nil, err
			}
			if len(a) > v2Run && isVersion(a[v2Version], EnvelopeV4) {
				if ids == nil {
					return nil, &FieldError{Field: "subject",
						Reason: "envelope version 4 leaves the suite and the run to the subject the fact is stored on, and none was given",
						Err:    ErrNeedsSubject}
				}
				a[v2Suite], a[v2Run] = ids.suite, ids.run
			}
			return v2Map(a)
		}
	}
	var v any
	if err := unmarshal(data, &v); err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	return nil, fmt.Errorf("a fact is a msgpack map or array, not %T", v)
}

// arrayElements decodes an array envelope generically, element by element,
// with a version 3 or 4 body's numbered keys named first (a generic decoder
// takes only string keys). A version 4 envelope comes back at version 3's
// positions, its suite and run nil.
func arrayElements(data []byte) ([]any, error) {
	var raw []msgpack.RawMessage
	if err := unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if len(raw) > 0 {
		var v any
		if err := unmarshal(raw[v2Version], &v); err == nil && isVersion(v, EnvelopeV4) {
			if len(raw) < v4Fields {
				return nil, fmt.Errorf("envelope version 4 has %d fields, want at least %d", len(raw), v4Fields)
			}
			raw = slices.Concat(raw[:v2Suite], []msgpack.RawMessage{nil, nil}, raw[v2Suite:])
		}
	}
	// Elements after the known ones are a newer writer's, which readers
	// skip: they need not decode here either.
	raw = raw[:min(len(raw), v2Fields)]
	out := make([]any, len(raw))
	for i, r := range raw {
		if len(r) == 0 {
			continue // nil decodes into a RawMessage as no bytes
		}
		if i == v2Body && (isVersion(out[v2Version], EnvelopeV3) || isVersion(out[v2Version], EnvelopeV4)) {
			b, err := codesToKeys(r)
			if err != nil {
				return nil, err
			}
			r = b
		}
		if err := unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", v2FieldName(i), err)
		}
	}
	return out, nil
}

func isVersion(v any, version int) bool { n, ok := asInt64(v); return ok && n == int64(version) }

// v2Map names the fields of a version 2, 3 or 4 envelope decoded
// generically (version 4's at version 3's positions).
func v2Map(a []any) (map[string]any, error) {
	if len(a) < v2Fields {
		return nil, fmt.Errorf("envelope version 2 has %d fields, want at least %d", len(a), v2Fields)
	}
	m := map[string]any{}
	for i, v := range a[:v2Fields] {
		switch i {
		case v2Version:
			continue
		case v2ID, v2Causation:
			if b, ok := v.([]byte); ok && len(b) == len(ulid.ULID{}) {
				v = ulid.ULID(b).String()
			}
			if v == nil && i == v2Causation {
				continue // version 1 leaves an empty causation out
			}
		case v2Kind:
			v = codeName(v, func(c int) string { return string(kindByCode[c]) }, len(kindByCode))
		case v2Service:
			v = codeName(v, func(c int) string { return string(ownerByCode[c]) }, len(ownerByCode))
		case v2At:
			if ns, ok := asInt64(v); ok {
				v = time.Unix(0, ns).UTC()
			}
		case v2Body:
			v = digestStrings(v)
		}
		key := v2FieldName(i)
		switch key {
		case "producer.service", "producer.instance":
			p, _ := m["producer"].(map[string]any)
			if p == nil {
				p = map[string]any{}
				m["producer"] = p
			}
			p[key[len("producer."):]] = v
		default:
			m[key] = v
		}
	}
	return m, nil
}

// codeName turns a known code into its name and leaves anything else as
// it is.
func codeName(v any, name func(int) string, n int) any {
	if c, ok := asInt64(v); ok && c > 0 && c < int64(n) && name(int(c)) != "" {
		return name(int(c))
	}
	return v
}

// digestStrings replaces every binary digest in a generically decoded body
// by its string form; bodies hold no other binary values.
func digestStrings(v any) any {
	switch v := v.(type) {
	case []byte:
		if d, err := digestFromWire(v); err == nil {
			return string(d)
		}
	case map[string]any:
		for k, c := range v {
			v[k] = digestStrings(c)
		}
	case []any:
		for i, c := range v {
			v[i] = digestStrings(c)
		}
	}
	return v
}

// asInt64 reads any msgpack integer decoded generically.
func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		if n <= 1<<63-1 {
			return int64(n), true
		}
	}
	return 0, false
}
