package events_test

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/events"
)

// rawElements splits an array envelope into its encoded elements.
func rawElements(t *testing.T, b []byte) []msgpack.RawMessage {
	t.Helper()
	var a []msgpack.RawMessage
	if err := msgpack.Unmarshal(b, &a); err != nil {
		t.Fatalf("an array envelope: %v", err)
	}
	return a
}

func joinElements(t *testing.T, a []msgpack.RawMessage) []byte {
	t.Helper()
	b, err := msgpack.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// namedKeys reads a version 3 body generically and names its numbered keys
// from the table alone, as a reader in another language does.
func namedKeys(t *testing.T, body []byte) any {
	t.Helper()
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	v, err := dec.DecodeInterface()
	if err != nil {
		t.Fatalf("a version 3 body: %v", err)
	}
	var name func(v any) any
	name = func(v any) any {
		switch v := v.(type) {
		case map[any]any:
			out := map[string]any{}
			for k, c := range v {
				n, ok := normalise(k).(int64)
				if !ok || n <= 0 || n >= int64(len(events.BodyKeys)) {
					t.Fatalf("body key %#v is no number of the table", k)
				}
				out[events.BodyKeys[n]] = name(c)
			}
			return out
		case []any:
			for i := range v {
				v[i] = name(v[i])
			}
		}
		return v
	}
	return name(v)
}

// Version 3 is version 2's array, position by position, with the version 3
// and the body's keys as the numbers of docs/facts.md's table: naming them
// gives back version 2's body, for every golden fixture.
func TestEnvelopeV3IsVersion2WithNumberedBodyKeys(t *testing.T) {
	for _, c := range goldenFacts(t) {
		v2, v3 := rawElements(t, mustEncodeV2(t, c.fact)), rawElements(t, mustEncode(t, c.fact))
		if len(v3) != 13 || !bytes.Equal(v3[0], []byte{0x03}) {
			t.Fatalf("%s: %d elements, the first %x; want 13 and the version 3", c.name, len(v3), v3[0])
		}
		for i := 1; i < 12; i++ {
			if !bytes.Equal(v2[i], v3[i]) {
				t.Errorf("%s: position %d is %x in version 3, %x in version 2", c.name, i, v3[i], v2[i])
			}
		}
		var want any
		if err := msgpack.Unmarshal(v2[12], &want); err != nil {
			t.Fatal(err)
		}
		if got := namedKeys(t, v3[12]); !reflect.DeepEqual(normaliseTree(got), normaliseTree(want)) {
			t.Errorf("%s: the body with its keys named\n  %#v\nversion 2's body\n  %#v", c.name, got, want)
		}
		if len(v3[12]) >= len(v2[12]) {
			t.Errorf("%s: the version 3 body is %d bytes, version 2's %d", c.name, len(v3[12]), len(v2[12]))
		}
	}
}

// Every key a golden body holds has a number, below 128 (one byte) for
// every key of the facts a turn writes.
func TestEveryBodyKeyHasANumber(t *testing.T) {
	perTurn := map[events.Kind]bool{events.KindTurnStarted: true, events.KindModelReplied: true,
		events.KindDispatchIntended: true, events.KindDispatchComplete: true, events.KindTurnCompleted: true,
		events.KindStallObserved: true, events.KindStopDecided: true}
	var keys func(v any, f func(string))
	keys = func(v any, f func(string)) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				f(k)
				keys(c, f)
			}
		case []any:
			for _, c := range v {
				keys(c, f)
			}
		}
	}
	for _, c := range goldenFacts(t) {
		var body any
		if err := msgpack.Unmarshal(rawElements(t, mustEncodeV2(t, c.fact))[12], &body); err != nil {
			t.Fatal(err)
		}
		keys(body, func(k string) {
			n := slices.Index(events.BodyKeys, k)
			switch {
			case n <= 0:
				t.Errorf("%s: body key %q has no number", c.name, k)
			case perTurn[c.fact.Kind()] && n >= 128:
				t.Errorf("%s: body key %q is number %d, two bytes on the wire", c.name, k, n)
			}
		})
	}
	if slices.Index(events.BodyKeys[1:], "") >= 0 {
		t.Error("the table has an empty key")
	}
}

// A version 3 body may still name a key (a writer whose table lacks it):
// the reader takes names and numbers alike.
func TestEnvelopeV3ReadsAKeyWrittenByName(t *testing.T) {
	f := goldenFact(t, "turn_started")
	a := rawElements(t, mustEncode(t, f))
	var body map[string]any
	if err := msgpack.Unmarshal(rawElements(t, mustEncodeV2(t, f))[12], &body); err != nil {
		t.Fatal(err)
	}
	named, err := msgpack.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	a[12] = named
	got, err := events.Decode(joinElements(t, a))
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Errorf("a version 3 fact with its body keys by name: %v\n  %#v", err, got)
	}
}

// A number the table does not hold is a key a newer writer added: skipped,
// as an unknown field is, and shown by WireMap as "#<number>".
func TestEnvelopeV3SkipsAKeyNumberItDoesNotKnow(t *testing.T) {
	f := goldenFact(t, "turn_started")
	a := rawElements(t, mustEncode(t, f))
	body := slices.Clone([]byte(a[12]))
	if body[0]&0xf0 != 0x80 || body[0] == 0x8f {
		t.Fatalf("turn_started's body is no small map: %x", body)
	}
	body[0]++
	body = append(body, 0xcd, 0x03, 0xe8, 0x07) // key 1000: 7
	a[12] = body
	b := joinElements(t, a)
	got, err := events.Decode(b)
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Errorf("an unknown key number: %v\n  %#v", err, got)
	}
	m, err := events.WireMap(b)
	if err != nil {
		t.Fatal(err)
	}
	if v := m["body"].(map[string]any)["#1000"]; normalise(v) != int64(7) {
		t.Errorf("WireMap shows the unknown key as %#v; body keys %v", v, slices.Sorted(maps.Keys(m["body"].(map[string]any))))
	}
}

// A forged version 3 body is refused with a classified error naming the
// fact, never a panic or a stack exhausted by nesting.
func TestEnvelopeV3RefusesForgedBodies(t *testing.T) {
	f := goldenFact(t, "turn_started")
	a := rawElements(t, mustEncode(t, f))
	deep := append(bytes.Repeat([]byte{0x81, 0x01}, 10_000), 0xc0)
	for name, body := range map[string][]byte{
		"nested ten thousand deep":     deep,
		"a key with no value":          {0x81, 0x01},
		"a string key cut short":       {0x81, 0xa5, 't', 'u'},
		"a type byte that is no value": {0x81, 0x01, 0xc1},
	} {
		t.Run(name, func(t *testing.T) {
			a[12] = body
			_, err := events.Decode(joinElements(t, a))
			var fe *events.FieldError
			if !errors.Is(err, events.ErrMalformed) || !errors.As(err, &fe) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
			if _, err := events.WireMap(joinElements(t, a)); err == nil {
				t.Error("WireMap shows it")
			}
		})
	}
}

// WireMap shows a version 3 fact as it shows the version 1 file of the same
// fact.
func TestWireMapOfVersion3AgreesWithVersion1(t *testing.T) {
	for _, name := range []string{"model_replied", "turn_completed_continue", "grade_verdict_scores", "run_claimed_extensions"} {
		v1, err := events.WireMap(goldenFiles(t)[name])
		if err != nil {
			t.Fatal(err)
		}
		v3, err := events.WireMap(goldenV3Files(t)[name])
		if err != nil {
			t.Fatal(err)
		}
		v1["at"], v3["at"] = normaliseAt(v1["at"]), normaliseAt(v3["at"])
		if !reflect.DeepEqual(normaliseTree(v1), normaliseTree(v3)) {
			t.Errorf("%s: version 1:\n  %#v\nversion 3:\n  %#v", name, v1, v3)
		}
	}
}

func normaliseAt(v any) any {
	if at, ok := v.(time.Time); ok {
		return at.UTC()
	}
	return v
}
