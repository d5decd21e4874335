package events_test

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/events"
)

// benchFact is a typical turn.completed: one executed, applied edit whose
// check failed with one diagnostic.
func benchFact(b testing.TB) events.Fact {
	b.Helper()
	f, err := events.NewFact(events.Meta{
		Suite: "bench", Run: "01JD8Z3Q4Y3B5N4X7F0W5T2K9M", TaskGeneration: 1, Position: 12,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "runner-1"},
	}, events.TurnCompleted{Evidence: events.RunEvidence{
		RunID: "01JD8Z3Q4Y3B5N4X7F0W5T2K9M", TaskGeneration: 1, Turn: 4, EvidencePosition: 11,
		ActorIntent: events.Continue(),
		Dispatches: []events.CompletedDispatch{{
			CallID: "call-4", EvidenceRef: "01JD8Z3Q4Y3B5N4X7F0W5T2K9M/call-4",
			Disposition: events.DispositionExecuted, Mutation: events.MutationApplied,
			Verification: events.Failed(4, true, events.Diagnostic{Message: "expected 2, got 3", File: "calc.go", Line: 12}),
		}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	return f
}

func BenchmarkEncode(b *testing.B) {
	f := benchFact(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := events.Encode(f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data, err := events.Encode(benchFact(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := events.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	f := benchFact(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeStored is Decode plus the subject check every reader now
// makes: the check's cost is the difference to BenchmarkDecode.
func BenchmarkDecodeStored(b *testing.B) {
	f := benchFact(b)
	data, err := events.Encode(f)
	if err != nil {
		b.Fatal(err)
	}
	subject, _ := f.Subject()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := events.DecodeStored(subject, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeVersions decodes the bench fact as each envelope version
// writes it: stores hold all three, and replays read whatever they hold.
func BenchmarkDecodeVersions(b *testing.B) {
	for _, v := range benchEncodings(b) {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(v.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := events.Decode(v.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type benchEncoding struct {
	name string
	data []byte
}

// benchEncodings returns the bench fact in envelope versions 1, 2 and 3.
func benchEncodings(tb testing.TB) []benchEncoding {
	tb.Helper()
	f := benchFact(tb)
	// Nothing writes version 1 any more; its keyed map is what WireMap
	// shows, and msgpack writes that map as version 1 did (keys sorted, so
	// that every run decodes the same bytes).
	m := wireMap(tb, f)
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(m); err != nil {
		tb.Fatal(err)
	}
	v1 := buf.Bytes()
	return []benchEncoding{{"v1", v1}, {"v2", mustEncodeV2(tb, f)}, {"v3", mustEncode(tb, f)}}
}
