package events_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/factline/factline/events"
)

// TestDecodeAllocations bounds what decoding a typical fact allocates in
// each envelope version: a replay decodes every fact of the log, and its
// allocations cost as much in the collector as the decoding itself
// (docs/benchmarks.md, "B4 and B5, profiled"). Before the body was read in
// place, its keys renamed in a pooled buffer and the IDs kept as bytes,
// the counts were 61, 49 and 49.
func TestDecodeAllocations(t *testing.T) {
	most := map[string]float64{"v1": 48, "v2": 32, "v3": 32}
	slack := 0.0
	if raceEnabled {
		slack = 4 // pools that drop what they hold; still below the old counts
	}
	for _, v := range benchEncodings(t) {
		got := testing.AllocsPerRun(200, func() {
			if _, err := events.Decode(v.data); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("envelope %s: %.0f allocations a decode", v.name, got)
		if got > most[v.name]+slack {
			t.Errorf("decoding the bench fact in envelope %s allocates %.0f times, want at most %.0f", v.name, got, most[v.name]+slack)
		}
	}
}

// TestDecodedFactsOwnTheirBytes pins that decoding reads a body where it
// lies, or renames its keys in a pooled buffer, but keeps none of either: a
// reader may reuse a message's buffer as soon as Decode returns.
func TestDecodedFactsOwnTheirBytes(t *testing.T) {
	for _, v := range benchEncodings(t) {
		want, err := events.Decode(v.data)
		if err != nil {
			t.Fatal(err)
		}
		buf := bytes.Clone(v.data)
		got, err := events.Decode(buf)
		if err != nil {
			t.Fatal(err)
		}
		for i := range buf {
			buf[i] = 0xa5
		}
		// Other facts' version 3 bodies pass through the pooled buffers
		// got's body was renamed in.
		for _, b := range goldenV3Files(t) {
			if _, err := events.Decode(b); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("envelope %s: overwriting the message changed the fact decoded from it:\n  %#v\nwant\n  %#v", v.name, got, want)
		}
	}
}

// withBodyField returns a version 2 fact's bytes with one more body field,
// key "zz" and the encoded value, as a newer writer might add it.
func withBodyField(t *testing.T, name string, value []byte) []byte {
	t.Helper()
	a := rawElements(t, mustEncodeV2(t, goldenFact(t, name)))
	body := a[len(a)-1]
	if body[0] < 0x80 || body[0] >= 0x8f {
		t.Fatalf("%s: body opens %#x, want a fixmap with room for one more key", name, body[0])
	}
	out := append([]byte{body[0] + 1}, body[1:]...)
	out = append(out, 0xa2, 'z', 'z')
	a[len(a)-1] = append(out, value...)
	return joinElements(t, a)
}

// A body is now measured where it lies rather than copied by msgpack's
// skip: what that skip took (a newer writer's field holding a map keyed by
// an array) still decodes, and what the walk bounds (nesting past 64
// levels, as version 3 already refused) is refused, not decoded.
func TestBodiesWalkedInPlaceTakeWhatMsgpackSkipped(t *testing.T) {
	want := goldenFact(t, "stop_decided_continue")
	got, err := events.Decode(withBodyField(t, "stop_decided_continue", []byte{0x81, 0x91, 0x01, 0x01}))
	if err != nil {
		t.Fatalf("a map keyed by an array in an unknown field: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n  %#v\nwant\n  %#v", got, want)
	}
	deep := append(bytes.Repeat([]byte{0x91}, 70), 0x01)
	if _, err := events.Decode(withBodyField(t, "stop_decided_continue", deep)); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("a body nested 71 levels deep: got %v, want ErrMalformed", err)
	}
}
