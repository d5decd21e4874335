package bus_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// oldFacts are facts as the writers of an older envelope version stored
// them: the events package's golden files of that version (in dir), the
// bytes those writers made; opening is how each file must start.
func oldFacts(t *testing.T, dir string, opening func([]byte) bool) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.msgpack"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files in %s: %v", dir, err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !opening(b) {
			t.Fatalf("%s is not of the version it should be: %x", p, b[:min(len(b), 2)])
		}
		f, err := events.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		subj, err := f.Subject()
		if err != nil {
			t.Fatal(err)
		}
		out[subj+" "+filepath.Base(p)] = b
	}
	return out
}

// A store written by the version 1 writers keeps reading: its messages
// (stored as those writers stored them) read back as the facts they
// encode, byte for byte the same through an export and an import into a
// new stream, and a run begun in version 1 loads whole after version 4
// facts joined it.
func TestAStoreWrittenInEnvelopeV1ReadsBackIdentically(t *testing.T) {
	readsBackIdentically(t, oldFacts(t, "../events/testdata/golden", func(b []byte) bool { return b[0]&0xf0 == 0x80 }))
}

// The same holds for a store the version 2 writers wrote (arrays whose body
// keys are names).
func TestAStoreWrittenInEnvelopeV2ReadsBackIdentically(t *testing.T) {
	readsBackIdentically(t, oldFacts(t, "../events/testdata/golden/v2", func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x9d, 0x02}) }))
}

// And for a store the version 3 writers wrote (the log's form before
// version 4 left the suite and the run to the subject).
func TestAStoreWrittenInEnvelopeV3ReadsBackIdentically(t *testing.T) {
	readsBackIdentically(t, oldFacts(t, "../events/testdata/golden/v3", func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x9d, 0x03}) }))
}

func readsBackIdentically(t *testing.T, files map[string][]byte) {
	ctx := testCtx(t)
	b, srv := bustest.Start(t)
	want := map[uint64][]byte{}
	for _, key := range slices.Sorted(maps.Keys(files)) {
		subj := key[:bytes.IndexByte([]byte(key), ' ')]
		ack, err := b.JetStream().PublishMsg(ctx, &nats.Msg{Subject: subj, Data: files[key]})
		if err != nil {
			t.Fatalf("store %s: %v", key, err)
		}
		want[ack.Sequence] = files[key]
	}
	check := func(b *bus.Bus, what string) {
		t.Helper()
		n := 0
		if _, err := b.Read(ctx, bus.ReadOptions{}, func(r bus.Raw) error {
			n++
			data, ok := want[r.Seq]
			if !ok {
				t.Errorf("%s: message %d was not stored", what, r.Seq)
				return nil
			}
			if !bytes.Equal(r.Data, data) {
				t.Errorf("%s: message %d is not the bytes the old writer stored", what, r.Seq)
			}
			got, err := r.Fact()
			if err != nil {
				t.Errorf("%s: message %d (%s): %v", what, r.Seq, r.Subject, err)
				return nil
			}
			if f, _ := events.Decode(data); !reflect.DeepEqual(got, f) {
				t.Errorf("%s: message %d read back as\n  %#v\nwant\n  %#v", what, r.Seq, got, f)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Errorf("%s: read %d facts, stored %d", what, n, len(want))
		}
	}
	check(b, "the store")

	var export bytes.Buffer
	if res, err := b.Export(ctx, &export, bus.ReadOptions{}); err != nil || res.Messages != len(want) {
		t.Fatalf("export: %+v, %v", res, err)
	}
	if err := b.JetStream().DeleteStream(ctx, bus.FactsStream); err != nil {
		t.Fatal(err)
	}
	fresh := bustest.OpenWith(t, srv, bus.Config{})
	if res, err := fresh.Import(ctx, &export); err != nil || res.Messages != len(want) {
		t.Fatalf("import: %+v, %v", res, err)
	}
	check(fresh, "the imported export")

	// A fact appended today to a run whose facts are of the old version.
	log, err := fresh.LoadRun(ctx, "nightly-2025-06", "r-7f3a")
	if err != nil {
		t.Fatal(err)
	}
	before := len(log.Records)
	if before == 0 {
		t.Fatal("the old run loaded empty")
	}
	next := bustest.Turn(t, "nightly-2025-06", "r-7f3a", log.NextPosition(), 1)
	recs, err := fresh.Append(ctx, log.Expect(), bus.Pending{Fact: next})
	if err != nil {
		t.Fatal(err)
	}
	m, err := fresh.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := m.GetMsg(ctx, recs[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw.Data, []byte{0x9b, events.EnvelopeV4}) {
		t.Errorf("a new fact is stored starting %x, want a version 4 array", raw.Data[:2])
	}
	log, err = fresh.LoadRun(ctx, "nightly-2025-06", "r-7f3a")
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != before+1 || !reflect.DeepEqual(log.Records[before].Fact, next) {
		t.Errorf("the mixed run loaded %d facts (want %d), last %#v", len(log.Records), before+1, log.Records[len(log.Records)-1].Fact)
	}
}

// A fact is stored in envelope version 4: its suite and run are the
// subject's, not written again in its bytes, and every reader (a run's
// load, a read of the stream, an export read back) still sees them.
func TestAFactIsStoredWithoutTheSuiteAndRunItsSubjectNames(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	suite, run := "suite-named-at-length-0001", "run-named-at-length-0001"
	f := bustest.Turn(t, suite, run, 1, 1)
	recs, err := b.Append(ctx, bus.Expect{}, bus.Pending{Fact: f})
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.JetStream().Stream(ctx, bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := m.GetMsg(ctx, recs[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	v3, err := events.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The body may name its run (a turn's evidence does); the envelope
	// does not any more.
	for _, id := range []string{suite, run} {
		if in, was := bytes.Count(raw.Data, []byte(id)), bytes.Count(v3, []byte(id)); in != was-1 {
			t.Errorf("the stored fact holds %q %d times, version 3 %d: the envelope repeats its subject's token\n%q", id, in, was, raw.Data)
		}
	}
	if saved := len(v3) - len(raw.Data); saved != len(suite)+1+len(run)+1 {
		t.Errorf("stored %d bytes, %d fewer than version 3; the suite and run take %d", len(raw.Data), saved, len(suite)+len(run)+2)
	}
	log, err := b.LoadRun(ctx, suite, run)
	if err != nil || len(log.Records) != 1 || !reflect.DeepEqual(log.Records[0].Fact, f) {
		t.Fatalf("load: %v, %+v", err, log.Records)
	}
	var export bytes.Buffer
	if _, err := b.Export(ctx, &export, bus.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := bus.ReadExport(&export, func(r bus.Raw) error {
		n++
		got, err := r.Fact()
		if err != nil || !reflect.DeepEqual(got, f) {
			t.Errorf("the export's entry %s reads as %#v, %v", r.Subject, got, err)
		}
		return nil
	}); err != nil || n != 1 {
		t.Fatalf("read export: %d entries, %v", n, err)
	}
}
