package events_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/events"
)

// v2Array decodes a version 2 fact generically, one element a position.
func v2Array(t *testing.T, b []byte) []any {
	t.Helper()
	var a []any
	if err := msgpack.Unmarshal(b, &a); err != nil {
		t.Fatalf("a version 2 fact is a msgpack array: %v", err)
	}
	return a
}

func v2Bytes(t *testing.T, a []any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Envelope version 2 is the array docs/facts.md lays out, position by
// position: what a reader in another language relies on.
func TestEnvelopeV2Layout(t *testing.T) {
	f := goldenFact(t, "run_claimed")
	a := v2Array(t, mustEncodeV2(t, f))
	if len(a) != 13 {
		t.Fatalf("%d elements, want 13", len(a))
	}
	cause := goldenID(2)
	want := []any{
		int8(2), f.ID[:], int8(3), int8(1), f.Suite, f.Run, int8(1), int8(3), cause[:],
		int8(2), f.Producer.Instance, f.At.UnixNano(),
	}
	for i, w := range want {
		if !reflect.DeepEqual(normalise(a[i]), normalise(w)) {
			t.Errorf("position %d = %#v, want %#v", i, a[i], w)
		}
	}
	body, ok := a[12].(map[string]any)
	if !ok || body["runner"] != "runner-a" {
		t.Errorf("position 12 (the body) = %#v, want the body's map", a[12])
	}
}

// mustEncodeV2 writes f as version 2 writers did: these tests pin that
// layout, which stores written before version 3 hold.
func mustEncodeV2(t testing.TB, f events.Fact) []byte {
	t.Helper()
	b, err := events.EncodeV2(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// normalise makes generically decoded integers comparable.
func normalise(v any) any {
	switch n := v.(type) {
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case uint8:
		return int64(n)
	case uint16:
		return int64(n)
	case uint32:
		return int64(n)
	case uint64:
		return int64(n)
	}
	return v
}

// A digest in a version 2 body is 33 bytes: the algorithm code 0x01
// (sha256) and the raw sum.
func TestEnvelopeV2DigestsAreBinary(t *testing.T) {
	f := goldenFact(t, "turn_started")
	a := v2Array(t, mustEncodeV2(t, f))
	got, ok := a[12].(map[string]any)["context_digest"].([]byte)
	d := f.Body.(events.TurnStarted).ContextDigest
	if !ok || len(got) != 33 || got[0] != 0x01 || "sha256:"+hexOf(got[1:]) != string(d) {
		t.Errorf("context_digest on the wire %#v, want 0x01 and the 32 bytes of %s", a[12].(map[string]any)["context_digest"], d)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// Elements after the last known position are a newer writer's additions:
// skipped, as version 1 skips unknown keys.
func TestEnvelopeV2SkipsFieldsANewerWriterAppended(t *testing.T) {
	f := goldenFact(t, "stop_decided_continue")
	a := append(v2Array(t, mustEncodeV2(t, f)), "added later", map[string]any{"x": 1})
	got, err := events.Decode(v2Bytes(t, a))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Errorf("got\n  %#v\nwant\n  %#v", got, f)
	}
}

// A version 2 fact that is short of fields, names another envelope version,
// or carries a kind number this reader does not know is refused with the
// classified error that names it.
func TestEnvelopeV2Refusals(t *testing.T) {
	base := func() []any { return v2Array(t, mustEncodeV2(t, goldenFact(t, "run_claimed"))) }
	for _, c := range []struct {
		name  string
		edit  func([]any) []any
		want  error
		field string
	}{
		{"short", func(a []any) []any { return a[:12] }, events.ErrMalformed, "fact"},
		{"another version", func(a []any) []any { a[0] = 4; return a }, events.ErrMalformed, "fact"},
		{"unknown kind number", func(a []any) []any { a[2] = 200; return a }, events.ErrUnknownKind, "kind"},
		{"kind by name", func(a []any) []any { a[2] = "run.claimed"; return a }, nil, ""},
		{"id not 16 bytes", func(a []any) []any { a[1] = []byte{1, 2, 3}; return a }, events.ErrMalformed, "fact"},
		{"unknown role number", func(a []any) []any { a[9] = 99; return a }, events.ErrInvalidField, "producer.service"},
		{"no time", func(a []any) []any { a[11] = nil; return a }, events.ErrMissingField, "at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := events.Decode(v2Bytes(t, c.edit(base())))
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var fe *events.FieldError
			if !errors.Is(err, c.want) || !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("got %v, want %v on field %q", err, c.want, c.field)
			}
		})
	}
}

// A binary digest of another algorithm or length is refused, naming the
// body; a string digest (as version 1 wrote it) inside a version 2 fact is
// read as it is.
func TestEnvelopeV2DigestForms(t *testing.T) {
	f := goldenFact(t, "turn_started")
	a := v2Array(t, mustEncodeV2(t, f))
	body := a[12].(map[string]any)
	d := body["context_digest"].([]byte)

	other := append([]byte{0x02}, d[1:]...)
	body["context_digest"] = other
	if _, err := events.Decode(v2Bytes(t, a)); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("a digest with algorithm code 2: %v, want ErrMalformed", err)
	}
	body["context_digest"] = d[:20]
	if _, err := events.Decode(v2Bytes(t, a)); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("a 20-byte digest: %v, want ErrMalformed", err)
	}
	body["context_digest"] = string(f.Body.(events.TurnStarted).ContextDigest)
	got, err := events.Decode(v2Bytes(t, a))
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Errorf("a string digest in a version 2 body: %v\n  %#v", err, got)
	}
}

// Unix nanoseconds end in 2262; a fact may still say a later time, which
// is written as the timestamp extension and reads back the same.
func TestEnvelopeV2TimesBeyondNanoseconds(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(2433, 9, 21, 7, 25, 13, 250000063, time.UTC),
		time.Date(1600, 1, 1, 0, 0, 0, 1, time.UTC),
	} {
		f := goldenFact(t, "run_claimed")
		f.At = at
		b := mustEncodeV2(t, f)
		got, err := events.Decode(b)
		if err != nil || !got.At.Equal(at) {
			t.Errorf("%v: read back %v, %v", at, got.At, err)
		}
		if !bytes.Equal(mustEncodeV2(t, got), b) {
			t.Errorf("%v: encoding is not stable", at)
		}
	}
}

// WireMap shows a version 2 fact as version 1's keyed map, so tools that
// print facts show both versions alike.
func TestWireMapOfBothVersionsAgrees(t *testing.T) {
	f := goldenFact(t, "model_replied")
	v1 := goldenFiles(t)["model_replied"]
	m1, err := events.WireMap(v1)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := events.WireMap(mustEncodeV2(t, f))
	if err != nil {
		t.Fatal(err)
	}
	m1["at"], m2["at"] = m1["at"].(time.Time).UTC(), m2["at"].(time.Time).UTC()
	if !reflect.DeepEqual(normaliseTree(m1), normaliseTree(m2)) {
		t.Errorf("version 1:\n  %#v\nversion 2:\n  %#v", m1, m2)
	}
}

func normaliseTree(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, c := range v {
			out[k] = normaliseTree(c)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, c := range v {
			out[i] = normaliseTree(c)
		}
		return out
	}
	return normalise(v)
}
