package events_test

import (
	"bytes"
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
// lies but keeps none of it: a reader may reuse a message's buffer as soon
// as Decode returns.
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
		if !reflect.DeepEqual(got, want) {
			t.Errorf("envelope %s: overwriting the message changed the fact decoded from it:\n  %#v\nwant\n  %#v", v.name, got, want)
		}
	}
}
