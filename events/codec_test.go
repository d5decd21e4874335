package events_test

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"

	"github.com/factline/factline/events"
)

// fatalfer is what checkRoundTrip needs of *testing.T and *rapid.T.
type fatalfer interface {
	Fatalf(format string, args ...any)
}

// checkRoundTrip asserts that f survives the wire unchanged and that its
// encoding is deterministic.
func checkRoundTrip(t fatalfer, f events.Fact) {
	b, err := events.Encode(f)
	if err != nil {
		t.Fatalf("encode %s: %v", f.Kind(), err)
	}
	got, err := events.Decode(b)
	if err != nil {
		t.Fatalf("decode %s: %v", f.Kind(), err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("round trip changed the fact:\n got %#v\nwant %#v", got, f)
	}
	again, err := events.Encode(got)
	if err != nil {
		t.Fatalf("re-encode %s: %v", f.Kind(), err)
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("re-encoding %s gave different bytes:\n%x\n%x", f.Kind(), again, b)
	}
}

func TestRoundTripEveryKind(t *testing.T) {
	for _, k := range events.Kinds() {
		t.Run(string(k), rapid.MakeCheck(func(t *rapid.T) {
			checkRoundTrip(t, genFactOf(k).Draw(t, "fact"))
		}))
	}
}

func TestRoundTripAnyFact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFact.Draw(t, "fact")
		checkRoundTrip(t, f)
		if _, err := f.Subject(); err != nil {
			t.Fatalf("valid %s fact has no subject: %v", f.Kind(), err)
		}
	})
}

// TestGeneratorsCoverEveryKind fails when a kind is added without a body
// generator, so the round-trip property silently skipping it is impossible.
func TestGeneratorsCoverEveryKind(t *testing.T) {
	for _, k := range events.Kinds() {
		g, ok := bodyGens[k]
		if !ok {
			t.Errorf("kind %s has no generator in bodyGens", k)
			continue
		}
		if got := g.Example(0).Kind(); got != k {
			t.Errorf("bodyGens[%s] generates %s bodies", k, got)
		}
	}
	for k := range bodyGens {
		if !k.Known() {
			t.Errorf("bodyGens has a generator for unknown kind %s", k)
		}
	}
}

// variantTypes maps each generator's name to the discriminator of a value it
// generates.
func variantTypes[V interface{ Type() string }](m map[string]*rapid.Generator[V]) map[string]string {
	out := make(map[string]string, len(m))
	for name, g := range m {
		out[name] = g.Example(0).Type()
	}
	return out
}

// TestGeneratorsCoverEveryVariant fails when a union admits a variant no
// generator makes.
func TestGeneratorsCoverEveryVariant(t *testing.T) {
	gens := map[string]map[string]string{
		"ActorIntent":   variantTypes(intentGens),
		"Verification":  variantTypes(verificationGens),
		"StopResult":    variantTypes(stopGens),
		"StallAction":   variantTypes(stallGens),
		"VerdictResult": variantTypes(verdictGens),
	}
	if got, want := slices.Sorted(maps.Keys(gens)), slices.Sorted(maps.Keys(events.UnionVariants)); !slices.Equal(got, want) {
		t.Fatalf("generated unions %v, package unions %v", got, want)
	}
	for union, admitted := range events.UnionVariants {
		if got, want := slices.Sorted(slices.Values(admitted)), events.UnionTables[union]; !slices.Equal(got, want) {
			t.Errorf("%s: names() %v and decoding table %v differ", union, got, want)
		}
		if got, want := slices.Sorted(maps.Keys(gens[union])), slices.Sorted(slices.Values(admitted)); !slices.Equal(got, want) {
			t.Errorf("%s: generators for %v, union admits %v", union, got, want)
		}
		for name, typ := range gens[union] {
			if name != typ {
				t.Errorf("%s: generator %q makes variant %q", union, name, typ)
			}
		}
	}
}

// The helpers below edit a fact's wire form as a generic msgpack map, the way
// a client in another language (or an older or newer writer) would.

// wireMap returns f as the keyed map of envelope version 1, nested
// map[string]any / []any: what a version 1 writer in any language makes of
// it, and what these tests edit. Readers keep decoding version 1.
func wireMap(t testing.TB, f events.Fact) map[string]any {
	t.Helper()
	b, err := events.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := events.WireMap(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func wireBytes(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walk walks path (string keys for maps, ints for arrays) from root.
func walk(t testing.TB, root any, path ...any) any {
	t.Helper()
	cur := root
	for i, p := range path {
		switch key := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map but %T", path[:i], cur)
			}
			cur = m[key]
		case int:
			a, ok := cur.([]any)
			if !ok || key >= len(a) {
				t.Fatalf("%v: not an array with index %d but %T", path[:i], key, cur)
			}
			cur = a[key]
		}
	}
	return cur
}

// set stores v at path; the last element must be a map key.
func set(t testing.TB, root map[string]any, v any, path ...any) {
	t.Helper()
	m, ok := walk(t, root, path[:len(path)-1]...).(map[string]any)
	if !ok {
		t.Fatalf("%v: parent is not a map", path)
	}
	m[path[len(path)-1].(string)] = v
}

// del removes the map key at path and fails if it was absent.
func del(t testing.TB, root map[string]any, path ...any) {
	t.Helper()
	m, ok := walk(t, root, path[:len(path)-1]...).(map[string]any)
	if !ok {
		t.Fatalf("%v: parent is not a map", path)
	}
	key := path[len(path)-1].(string)
	if _, ok := m[key]; !ok {
		t.Fatalf("%v: no such key to delete", path)
	}
	delete(m, key)
}

func TestDecodeRefuses(t *testing.T) {
	upperHex := strings.ToUpper(digest("x").Hex())
	tests := []struct {
		name     string
		base     string                           // golden fixture to start from
		edit     func(testing.TB, map[string]any) // applied to its wire map
		raw      []byte                           // used instead of base+edit when set
		sentinel error
		kind     events.Kind
		field    string
	}{
		// The envelope.
		{name: "unknown kind", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["kind"] = "run.exploded" },
			sentinel: events.ErrUnknownKind, field: "kind"},
		{name: "missing kind", base: "run_ended", edit: func(t testing.TB, m map[string]any) { delete(m, "kind") },
			sentinel: events.ErrMissingField, field: "kind"},
		{name: "schema newer than known", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["schema"] = events.KindRunEnded.Version() + 1 },
			sentinel: events.ErrUnsupportedVersion, kind: events.KindRunEnded, field: "schema"},
		{name: "missing schema", base: "run_ended", edit: func(t testing.TB, m map[string]any) { delete(m, "schema") },
			sentinel: events.ErrMissingField, kind: events.KindRunEnded, field: "schema"},
		{name: "missing id", base: "run_ended", edit: func(t testing.TB, m map[string]any) { delete(m, "id") },
			sentinel: events.ErrMissingField, kind: events.KindRunEnded, field: "id"},
		{name: "id not a ULID", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["id"] = "run-ended-1" },
			sentinel: events.ErrInvalidField, kind: events.KindRunEnded, field: "id"},
		{name: "causation not a ULID", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["causation"] = "previous" },
			sentinel: events.ErrInvalidField, kind: events.KindRunEnded, field: "causation"},
		{name: "missing at", base: "run_ended", edit: func(t testing.TB, m map[string]any) { delete(m, "at") },
			sentinel: events.ErrMissingField, kind: events.KindRunEnded, field: "at"},
		// msgpack v5.4.1 panics decoding nil into a time.Time; Decode reads
		// "at" through a pointer so that nil is a missing field, not a panic
		// caught by Decode's recover guard (found by FuzzDecode).
		{name: "nil at", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["at"] = nil },
			sentinel: events.ErrMissingField, kind: events.KindRunEnded, field: "at"},
		{name: "suite token with a dot", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["suite"] = "nightly.2025" },
			sentinel: events.ErrBadToken, kind: events.KindRunEnded, field: "suite"},
		{name: "position zero", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["position"] = 0 },
			sentinel: events.ErrInvalidField, kind: events.KindRunEnded, field: "position"},
		{name: "run fact without task generation", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["task_generation"] = 0 },
			sentinel: events.ErrInvalidField, kind: events.KindRunEnded, field: "task_generation"},
		{name: "wrong producer role", base: "run_ended", edit: func(t testing.TB, m map[string]any) { set(t, m, "grader", "producer", "service") },
			sentinel: events.ErrInvalidField, kind: events.KindRunEnded, field: "producer.service"},
		{name: "missing producer instance", base: "run_ended", edit: func(t testing.TB, m map[string]any) { del(t, m, "producer", "instance") },
			sentinel: events.ErrMissingField, kind: events.KindRunEnded, field: "producer.instance"},
		{name: "suite-scoped kind with a run token", base: "suite_submitted", edit: func(t testing.TB, m map[string]any) { m["run"] = goldenRun },
			sentinel: events.ErrInvalidField, kind: events.KindSuiteSubmitted, field: "run"},
		{name: "suite-scoped kind with a task generation", base: "suite_reported", edit: func(t testing.TB, m map[string]any) { m["task_generation"] = 1 },
			sentinel: events.ErrInvalidField, kind: events.KindSuiteReported, field: "task_generation"},
		{name: "run kind in the suite scope", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["run"] = events.SuiteScope },
			sentinel: events.ErrBadToken, kind: events.KindRunEnded, field: "run"},

		// Unions.
		{name: "unknown actor intent variant", base: "turn_completed_continue",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "maybe", "body", "evidence", "actor_intent", "type") },
			sentinel: events.ErrUnknownVariant, kind: events.KindTurnCompleted, field: "body.evidence.actor_intent.type"},
		{name: "missing actor intent type", base: "turn_completed_propose_done",
			edit:     func(t testing.TB, m map[string]any) { del(t, m, "body", "evidence", "actor_intent", "type") },
			sentinel: events.ErrMissingField, kind: events.KindTurnCompleted, field: "body.evidence.actor_intent.type"},
		{name: "empty actor intent type", base: "turn_completed_continue",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "", "body", "evidence", "actor_intent", "type") },
			sentinel: events.ErrMissingField, kind: events.KindTurnCompleted, field: "body.evidence.actor_intent.type"},
		{name: "nil actor intent", base: "turn_completed_continue",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, nil, "body", "evidence", "actor_intent") },
			sentinel: events.ErrMissingField, kind: events.KindTurnCompleted, field: "body.evidence.actor_intent.type"},
		{name: "absent actor intent", base: "turn_completed_continue",
			edit:     func(t testing.TB, m map[string]any) { del(t, m, "body", "evidence", "actor_intent") },
			sentinel: events.ErrMissingField, kind: events.KindTurnCompleted, field: "body.evidence.actor_intent.type"},
		{name: "unknown verification variant in a dispatch", base: "turn_completed_continue",
			edit: func(t testing.TB, m map[string]any) {
				set(t, m, "flaky", "body", "evidence", "dispatches", 1, "verification", "type")
			},
			sentinel: events.ErrUnknownVariant, kind: events.KindTurnCompleted, field: "body.evidence.dispatches[1].verification.type"},
		{name: "unknown stall action variant", base: "stall_observed_retry",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "pause", "body", "observation", "action", "type") },
			sentinel: events.ErrUnknownVariant, kind: events.KindStallObserved, field: "body.observation.action.type"},
		{name: "unknown stop result variant", base: "stop_decided_finish",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "maybe", "body", "decision", "result", "type") },
			sentinel: events.ErrUnknownVariant, kind: events.KindStopDecided, field: "body.decision.result.type"},
		{name: "unknown verdict variant", base: "grade_verdict_passed",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "maybe", "body", "verdict", "result", "type") },
			sentinel: events.ErrUnknownVariant, kind: events.KindGradeVerdict, field: "body.verdict.result.type"},
		{name: "union that is not a map", base: "turn_completed_continue",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "continue", "body", "evidence", "actor_intent") },
			sentinel: events.ErrMalformed, kind: events.KindTurnCompleted, field: "body"},

		// Body fields.
		{name: "missing required field", base: "run_ended", edit: func(t testing.TB, m map[string]any) { del(t, m, "body", "reason") },
			sentinel: events.ErrMissingField, kind: events.KindRunEnded, field: "body.reason"},
		{name: "missing required field in an array element", base: "turn_completed_continue",
			edit:     func(t testing.TB, m map[string]any) { del(t, m, "body", "evidence", "dispatches", 0, "call_id") },
			sentinel: events.ErrMissingField, kind: events.KindTurnCompleted, field: "body.evidence.dispatches[0].call_id"},
		{name: "missing required variant field", base: "stop_decided_finish",
			edit:     func(t testing.TB, m map[string]any) { del(t, m, "body", "decision", "result", "reason") },
			sentinel: events.ErrMissingField, kind: events.KindStopDecided, field: "body.decision.result.reason"},
		{name: "unknown enum value", base: "run_ended", edit: func(t testing.TB, m map[string]any) { set(t, m, "won", "body", "status") },
			sentinel: events.ErrInvalidField, kind: events.KindRunEnded, field: "body.status"},
		{name: "digest with another algorithm", base: "run_requested",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "md5:"+digest("x").Hex(), "body", "case_digest") },
			sentinel: events.ErrInvalidField, kind: events.KindRunRequested, field: "body.case_digest"},
		{name: "digest in upper case", base: "run_requested",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "sha256:"+upperHex, "body", "treatment_digest") },
			sentinel: events.ErrInvalidField, kind: events.KindRunRequested, field: "body.treatment_digest"},
		{name: "digest too short", base: "candidate_sealed",
			edit:     func(t testing.TB, m map[string]any) { set(t, m, "sha256:abc", "body", "fixture_digest") },
			sentinel: events.ErrInvalidField, kind: events.KindCandidateSealed, field: "body.fixture_digest"},
		{name: "missing body", base: "run_ended", edit: func(t testing.TB, m map[string]any) { delete(m, "body") },
			sentinel: events.ErrMissingField, kind: events.KindRunEnded, field: "body"},
		{name: "nil body", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["body"] = nil },
			sentinel: events.ErrMissingField, kind: events.KindRunEnded, field: "body"},
		{name: "body that is a string", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["body"] = "done" },
			sentinel: events.ErrMalformed, kind: events.KindRunEnded, field: "body"},
		{name: "body that is a number", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["body"] = 7 },
			sentinel: events.ErrMalformed, kind: events.KindRunEnded, field: "body"},
		{name: "body field of the wrong type", base: "run_ended", edit: func(t testing.TB, m map[string]any) { set(t, m, "two", "body", "steps") },
			sentinel: events.ErrMalformed, kind: events.KindRunEnded, field: "body"},

		// Bytes that are no fact at all.
		{name: "envelope field of the wrong type", base: "run_ended", edit: func(t testing.TB, m map[string]any) { m["position"] = "first" },
			sentinel: events.ErrMalformed, field: "fact"},
		{name: "empty input", raw: []byte{},
			sentinel: events.ErrMalformed, field: "fact"},
		{name: "garbage bytes", raw: []byte{0xc1, 0xff, 0x00, 0x13},
			sentinel: events.ErrMalformed, field: "fact"},
		{name: "json text", raw: []byte(`{"kind":"run.ended"}`),
			sentinel: events.ErrMalformed, field: "fact"},
		{name: "msgpack string", raw: []byte{0xa3, 'r', 'u', 'n'},
			sentinel: events.ErrMalformed, field: "fact"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.raw
			if data == nil {
				m := wireMap(t, goldenFact(t, tc.base))
				tc.edit(t, m)
				data = wireBytes(t, m)
			}
			f, err := events.Decode(data)
			wantFieldError(t, err, tc.sentinel, tc.kind, tc.field)
			if !reflect.DeepEqual(f, events.Fact{}) {
				t.Errorf("refused decode returned a non-zero fact %#v", f)
			}
		})
	}
}

func TestDecodeRefusesTruncatedFacts(t *testing.T) {
	for _, c := range goldenFacts(t) {
		b, err := events.Encode(c.fact)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, len(b) / 2, len(b) - 1} {
			_, err := events.Decode(b[:n])
			if !errors.Is(err, events.ErrMalformed) {
				t.Errorf("%s cut to %d of %d bytes: got %v, want ErrMalformed", c.name, n, len(b), err)
			}
		}
	}
}

func mustEncode(t testing.TB, f events.Fact) []byte {
	t.Helper()
	b, err := events.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeRefusesNilBody checks the one thing Encode refuses: it does not
// validate otherwise.
func TestEncodeRefusesNilBody(t *testing.T) {
	_, err := events.Encode(events.Fact{ID: goldenID(1)})
	wantFieldError(t, err, events.ErrMissingField, "", "body")
}

// TestWireKeys pins the envelope keys and the union layout that other
// languages read (docs/facts.md).
func TestWireKeys(t *testing.T) {
	f := goldenFact(t, "turn_completed_continue")
	m := wireMap(t, f)
	want := []string{"at", "body", "causation", "id", "kind", "position", "producer", "run", "schema", "suite", "task_generation"}
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
		t.Errorf("envelope keys %v, want %v", got, want)
	}
	if got := slices.Sorted(maps.Keys(m["producer"].(map[string]any))); !slices.Equal(got, []string{"instance", "service"}) {
		t.Errorf("producer keys %v", got)
	}
	if m["id"] != f.ID.String() || m["kind"] != string(events.KindTurnCompleted) {
		t.Errorf("id %v kind %v", m["id"], m["kind"])
	}
	intent := walk(t, m, "body", "evidence", "actor_intent").(map[string]any)
	if !reflect.DeepEqual(intent, map[string]any{"type": "continue"}) {
		t.Errorf("continue intent on the wire: %#v", intent)
	}
	verification := walk(t, m, "body", "evidence", "dispatches", 1, "verification").(map[string]any)
	if verification["type"] != "passed" || len(verification) != 2 || verification["source_epoch"] == nil {
		t.Errorf("passed verification on the wire: %#v", verification)
	}

	// The union's "type" is its first key, so streaming readers can
	// dispatch before reading the rest: by name in version 2, by its
	// number in version 3.
	raw, err := events.EncodeV2(f)
	if err != nil {
		t.Fatal(err)
	}
	typeKey := []byte{0xa4, 't', 'y', 'p', 'e', 0xa6, 'p', 'a', 's', 's', 'e', 'd', 0xac}
	if !bytes.Contains(raw, typeKey) {
		t.Errorf("version 2 encoding lacks a map whose first entry is type=passed followed by source_epoch: %x", raw)
	}
	raw = mustEncode(t, f)
	typeCode := []byte{0x82, byte(slices.Index(events.BodyKeys, "type")), 0xa6, 'p', 'a', 's', 's', 'e', 'd',
		byte(slices.Index(events.BodyKeys, "source_epoch"))}
	if !bytes.Contains(raw, typeCode) {
		t.Errorf("version 3 encoding lacks a map whose first entry is type=passed followed by source_epoch, by number: %x", raw)
	}

	// In envelope version 1, at is the msgpack timestamp extension (type
	// -1); version 2 writes Unix nanoseconds (TestEnvelopeV2Layout).
	b := goldenFiles(t)["run_claimed"]
	key := append([]byte{0xa2}, "at"...)
	i := bytes.Index(b, key)
	if i < 0 || !isTimestampExt(b[i+len(key):]) {
		t.Errorf("at is not a msgpack timestamp extension: %x", b)
	}
}

// isTimestampExt reports whether b starts with a msgpack ext of type -1.
func isTimestampExt(b []byte) bool {
	switch {
	case len(b) >= 2 && (b[0] == 0xd6 || b[0] == 0xd7): // fixext 4, fixext 8
		return b[1] == 0xff
	case len(b) >= 3 && b[0] == 0xc7: // ext 8 (the 12-byte form)
		return b[2] == 0xff
	}
	return false
}
