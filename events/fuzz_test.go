package events_test

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// sentinels are the classifications every refusal carries.
var sentinels = []error{
	events.ErrMalformed, events.ErrUnknownKind, events.ErrUnsupportedVersion,
	events.ErrUnknownVariant, events.ErrMissingField, events.ErrInvalidField, events.ErrBadToken,
	events.ErrNeedsSubject,
}

// FuzzDecode feeds arbitrary bytes to Decode. Decode must never panic and
// must refuse with a classified *FieldError; what it accepts must survive a
// re-encode and decode unchanged, with stable bytes.
//
// The seeds are the golden files of every envelope version (added below;
// Decode refuses version 4's, which need their subject: FuzzDecodeStored
// reads them) and the checked-in corpus in testdata/fuzz/FuzzDecode
// (golden facts of versions 1 to 3, truncated and with a byte flipped).
func FuzzDecode(f *testing.F) {
	for _, files := range []map[string][]byte{goldenFiles(f), goldenV2Files(f), goldenV3Files(f), goldenV4Files(f)} {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			f.Add(files[name])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fact, err := events.Decode(data)
		if err != nil {
			var fe *events.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("refusal %q (%T) is not a *FieldError", err, err)
			}
			// Decode recovers from panics and reports them as this form;
			// a panic anywhere below Decode is a bug to find, not to hide.
			if fe.Field == "fact" && strings.HasPrefix(fe.Reason, "undecodable: ") {
				t.Fatalf("decoding panicked: %v", err)
			}
			if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) {
				t.Fatalf("refusal %q has no sentinel", err)
			}
			if !reflect.DeepEqual(fact, events.Fact{}) {
				t.Fatalf("refusal %q came with a fact", err)
			}
			return
		}
		b, err := events.Encode(fact)
		if err != nil {
			t.Fatalf("decoded fact does not encode: %v", err)
		}
		again, err := events.Decode(b)
		if err != nil {
			t.Fatalf("re-encoded fact does not decode: %v\n%#v", err, fact)
		}
		if !reflect.DeepEqual(again, fact) {
			t.Fatalf("re-encode changed the fact:\n got %#v\nwant %#v", again, fact)
		}
		b2, err := events.Encode(again)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: %v\n%x\n%x", err, b, b2)
		}
	})
}

// FuzzWireMap feeds arbitrary bytes to WireMap, the generic reader factline
// decode and tail --json show facts with. It must never panic, and every
// fact Decode accepts must also show as a map whose id and kind are the
// fact's. Seeds: the golden files of every version and testdata/fuzz/FuzzWireMap.
func FuzzWireMap(f *testing.F) {
	for _, files := range []map[string][]byte{goldenFiles(f), goldenV2Files(f), goldenV3Files(f), goldenV4Files(f)} {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			f.Add(files[name])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := events.WireMap(data)
		fact, derr := events.Decode(data)
		if derr != nil {
			return
		}
		if err != nil {
			t.Fatalf("Decode accepts the fact, WireMap refuses it: %v", err)
		}
		if m["id"] != fact.ID.String() || m["kind"] != string(fact.Kind()) {
			t.Fatalf("WireMap shows id %v kind %v, the fact is %s %s", m["id"], m["kind"], fact.ID, fact.Kind())
		}
	})
}

// FuzzDecodeStored feeds a subject and arbitrary bytes to DecodeStored,
// the reader of every stored message. It must never panic; it refuses with
// a classified *FieldError or a *SubjectMismatchError; and a fact it
// accepts is its subject's (MatchSubject) and survives EncodeStored and
// DecodeStored on the same subject unchanged, with stable bytes.
//
// The seeds are the version 4 golden files on their fixtures' subjects
// (added below) and testdata/fuzz/FuzzDecodeStored (the same, truncated and
// with a byte flipped).
func FuzzDecodeStored(f *testing.F) {
	fixtures := map[string]events.Fact{}
	for _, c := range goldenFacts(f) {
		fixtures[c.name] = c.fact
	}
	files := goldenV4Files(f)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f.Add(goldenSubject(f, fixtures[name]), files[name])
	}
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		fact, err := events.DecodeStored(subject, data)
		if err != nil {
			var fe *events.FieldError
			var mm *events.SubjectMismatchError
			switch {
			case errors.As(err, &mm):
			case !errors.As(err, &fe):
				t.Fatalf("refusal %q (%T) is neither a *FieldError nor a mismatch", err, err)
			case fe.Field == "fact" && strings.HasPrefix(fe.Reason, "undecodable: "):
				t.Fatalf("decoding panicked: %v", err)
			case !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }):
				t.Fatalf("refusal %q has no sentinel", err)
			}
			if !reflect.DeepEqual(fact, events.Fact{}) {
				t.Fatalf("refusal %q came with a fact", err)
			}
			return
		}
		if err := events.MatchSubject(fact, subject); err != nil {
			t.Fatalf("an accepted fact is not its subject's: %v", err)
		}
		b, err := events.EncodeStored(fact)
		if err != nil {
			t.Fatalf("decoded fact does not encode: %v", err)
		}
		again, err := events.DecodeStored(subject, b)
		if err != nil {
			t.Fatalf("re-encoded fact does not decode: %v\n%#v", err, fact)
		}
		if !reflect.DeepEqual(again, fact) {
			t.Fatalf("re-encode changed the fact:\n got %#v\nwant %#v", again, fact)
		}
		if b2, err := events.EncodeStored(again); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: %v\n%x\n%x", err, b, b2)
		}
	})
}
