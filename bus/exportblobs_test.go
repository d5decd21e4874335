package bus_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// blobStore is a store whose facts name three blobs (a request of 2.5 MiB
// stored whole, the next request stored as a delta of it, a containment
// record) and one digest it holds no blob of.
type blobStore struct {
	b                           *bus.Bus
	big, delta, contain, unheld events.Digest
	blobs                       map[events.Digest][]byte
}

func newBlobStore(ctx context.Context, t *testing.T) blobStore {
	t.Helper()
	b, _ := bustest.Start(t)
	big := bytes.Repeat([]byte("the model's request, turn by turn. "), 75_000) // 2.6 MB: three parts
	next := append(bytes.Clone(big), "and one more message"...)
	v1, err := b.Blobs().PutAfter(ctx, big, nil)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := b.Blobs().PutAfter(ctx, next, v1)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b.Blobs().Stat(ctx, v2.Digest); err != nil || st.Depth != 1 {
		t.Fatalf("the second request is not stored as a delta: %+v, %v", st, err)
	}
	contain := []byte(`{"runner":"r"}`)
	cd, err := b.Blobs().Put(ctx, contain)
	if err != nil {
		t.Fatal(err)
	}
	unheld := events.DigestOf([]byte("never stored"))
	meta := func(pos uint64) events.Meta {
		return events.Meta{Suite: "s", Run: "r1", TaskGeneration: 1, Position: pos,
			Producer: events.Producer{Service: events.OwnerRunner, Instance: "t"}}
	}
	appendBodies(t, b, meta, []events.Body{
		events.RunClaimed{Runner: "t", Lease: 1, ContainmentDigest: cd},
		events.TurnStarted{Turn: 1, ContextDigest: v1.Digest, Messages: 1},
		events.TurnStarted{Turn: 2, ContextDigest: v2.Digest, Messages: 2},
		events.TurnStarted{Turn: 3, ContextDigest: v2.Digest, Messages: 2}, // named again: carried once
		events.TurnStarted{Turn: 4, ContextDigest: unheld, Messages: 3},
	})
	return blobStore{b: b, big: v1.Digest, delta: v2.Digest, contain: cd, unheld: unheld,
		blobs: map[events.Digest][]byte{v1.Digest: big, v2.Digest: next, cd: contain}}
}

// ExportWithBlobs writes each blob the facts name once, whole (a delta
// rebuilt), before the first fact that names it; an import into a fresh
// store restores every one, and one into a store that holds some skips
// those. Export wrote facts only, and an import gave a store whose facts
// named blobs it did not hold.
func TestAnExportWithBlobsRestoresThemIntoAFreshStore(t *testing.T) {
	ctx := testCtx(t)
	src := newBlobStore(ctx, t)
	var buf bytes.Buffer
	res, err := src.b.ExportWithBlobs(ctx, &buf, bus.ReadOptions{})
	if err != nil || res.Version != 3 || res.Messages != 5 || res.Blobs != 3 || res.MissingBlobs != 1 {
		t.Fatalf("export: %+v, %v; want version 3, 5 messages, 3 blobs, 1 blob missing", res, err)
	}
	// The order a reader meets them in: each blob before its first fact.
	var order []string
	_, err = bus.ReadExportWith(bytes.NewReader(buf.Bytes()), bus.ExportVisitor{
		BlobData: true,
		Blob: func(b bus.ExportBlob) error {
			if !bytes.Equal(b.Data, src.blobs[b.Digest]) {
				t.Errorf("blob %s reads as %d bytes, not the %d stored", b.Digest, len(b.Data), len(src.blobs[b.Digest]))
			}
			order = append(order, "blob "+string(b.Digest))
			return nil
		},
		Fact: func(r bus.Raw) error { order = append(order, r.Subject); return nil },
	})
	want := []string{"blob " + string(src.contain), "fact.s.r1.run.claimed", "blob " + string(src.big), "fact.s.r1.turn.started",
		"blob " + string(src.delta), "fact.s.r1.turn.started", "fact.s.r1.turn.started", "fact.s.r1.turn.started"}
	if err != nil || strings.Join(order, "\n") != strings.Join(want, "\n") {
		t.Errorf("read back: %v\n%s\nwant\n%s", err, strings.Join(order, "\n"), strings.Join(want, "\n"))
	}

	fresh, _ := bustest.Start(t)
	got, err := importFile(ctx, t, fresh, filepath.Join(t.TempDir(), "blobs.flx"), buf.Bytes())
	if err != nil || got.Version != 3 || got.Messages != 5 || got.Blobs != 3 || got.BlobsPresent != 0 {
		t.Fatalf("import: %+v, %v", got, err)
	}
	for d, data := range src.blobs {
		if b, err := fresh.Blobs().Get(ctx, d); err != nil || !bytes.Equal(b, data) {
			t.Errorf("the imported store's blob %s: %d bytes, %v; want the %d exported", d, len(b), err, len(data))
		}
	}

	// A store that holds one of them already keeps it and stores the rest.
	some, _ := bustest.Start(t)
	if _, err := some.Blobs().Put(ctx, src.blobs[src.contain]); err != nil {
		t.Fatal(err)
	}
	got, err = some.Import(ctx, struct{ *bytes.Reader }{bytes.NewReader(buf.Bytes())})
	if err != nil || got.Blobs != 3 || got.BlobsPresent != 1 {
		t.Errorf("import into a store that holds one: %+v, %v", got, err)
	}
	if _, err := some.Blobs().Get(ctx, src.big); err != nil {
		t.Errorf("import into a store that holds one: %v", err)
	}
}

// Export (export --no-blobs) still writes a version 2 file of the facts
// only, which imports and reads as before.
func TestAVersion2ExportStillImportsAndReads(t *testing.T) {
	ctx := testCtx(t)
	src := newBlobStore(ctx, t)
	var buf bytes.Buffer
	res, err := src.b.Export(ctx, &buf, bus.ReadOptions{})
	if err != nil || res.Version != 2 || res.Blobs != 0 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	n := 0
	if err := bus.ReadExport(bytes.NewReader(buf.Bytes()), func(bus.Raw) error { n++; return nil }); err != nil || n != 5 {
		t.Fatalf("read: %d, %v", n, err)
	}
	fresh, _ := bustest.Start(t)
	got, err := importFile(ctx, t, fresh, filepath.Join(t.TempDir(), "facts.flx"), buf.Bytes())
	if err != nil || got.Version != 2 || got.Messages != 5 || got.Blobs != 0 {
		t.Fatalf("import: %+v, %v", got, err)
	}
	if _, err := fresh.Blobs().Get(ctx, src.big); !errors.Is(err, bus.ErrBlobNotFound) {
		t.Errorf("a version 2 import stored a blob: %v", err)
	}
}

// exportMaps returns where each map of an export starts and ends.
// exported is the store's export with its blobs, and the spans of its
// maps (exportMaps).
func (s *blobStore) exported(ctx context.Context, t *testing.T) ([]byte, [][2]int) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.b.ExportWithBlobs(ctx, &buf, bus.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), exportMaps(t, buf.Bytes())
}

func exportMaps(t *testing.T, data []byte) [][2]int {
	t.Helper()
	ends := entryEnds(t, data, 0)
	var spans [][2]int
	for start := 0; start < len(data); {
		end := ends[0]
		if start > 0 {
			end = start + entryEnds(t, data[start:], 0)[0]
		}
		spans = append(spans, [2]int{start, end})
		start = end
	}
	return spans
}

// A version 3 file whose blob was changed, lost a part, or was cut inside
// a blob's entry is refused with an *ExportError naming the entry (and
// the blob), and an import of it stores nothing: no fact, no blob.
func TestABrokenBlobEntryIsATypedError(t *testing.T) {
	ctx := testCtx(t)
	src := newBlobStore(ctx, t)
	whole, maps := src.exported(ctx, t)
	// Maps: header, the containment, the claim, the big request's three
	// parts (entries 3 to 5), its turn, the delta's, ...
	if len(maps) != 14 {
		t.Fatalf("the export has %d maps; want 14", len(maps))
	}
	changed := bytes.Clone(whole)
	changed[maps[4][1]-10] ^= 1 // a byte of the big request's middle part
	lost := append(bytes.Clone(whole[:maps[4][0]]), whole[maps[4][1]:]...)
	cut := whole[:maps[4][0]+1000]
	for _, c := range []struct {
		name    string
		data    []byte
		kind    error
		digest  events.Digest
		entries int
		says    string
	}{
		{"a changed byte", changed, bus.ErrExportBadBlob, src.big, 4, "entry 5 ends blob " + string(src.big) + ", but its bytes (entries 3 to 5) are"},
		{"a lost part", lost, bus.ErrExportBadBlob, src.big, 3, "entry 4 holds blob " + string(src.big) + " from byte 2097152 where its part at byte 1048576 was due"},
		{"a cut inside a part", cut, bus.ErrExportCut, "", 3, "the file ends inside entry 4"},
	} {
		err := bus.ReadExport(bytes.NewReader(c.data), func(bus.Raw) error { return nil })
		var ee *bus.ExportError
		if !errors.As(err, &ee) || !errors.Is(err, c.kind) || ee.Digest != c.digest || ee.Entries != c.entries || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v (%#v); want %v naming %q after %d entries", c.name, err, ee, c.kind, c.says, c.entries)
		}
		b, _ := bustest.Start(t)
		path := filepath.Join(t.TempDir(), "broken.flx")
		if _, err := importFile(ctx, t, b, path, c.data); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), "nothing was imported") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: import: %v", c.name, err)
		}
		if held := factsHeld(t, b); held != 0 {
			t.Errorf("%s: the store holds %d facts after the import was refused", c.name, held)
		}
		if _, err := b.Blobs().Get(ctx, src.contain); !errors.Is(err, bus.ErrBlobNotFound) {
			t.Errorf("%s: the store holds a blob of the refused file: %v", c.name, err)
		}
	}
}

// A map in a version 3 file that is neither a message, a blob's part nor
// the end marker is refused as an entry that holds no message.
func TestAnUnknownEntryOfAVersion3FileIsRefused(t *testing.T) {
	ctx := testCtx(t)
	src := newBlobStore(ctx, t)
	whole, maps := src.exported(ctx, t)
	// A second header where the claim was: two files run together.
	odd := append(bytes.Clone(whole[:maps[2][0]]), whole[:maps[0][1]]...)
	odd = append(odd, whole[maps[2][1]:]...)
	err := bus.ReadExport(bytes.NewReader(odd), func(bus.Raw) error { return nil })
	var ee *bus.ExportError
	if !errors.As(err, &ee) || !errors.Is(err, bus.ErrExportBadEntry) || ee.Entries != 1 || !strings.Contains(err.Error(), "entry 2 holds no message") {
		t.Errorf("a header among the entries: %v", err)
	}
}

// docs/readfact.js, the foreign reader written from the docs alone, reads
// a version 3 export's facts past its blobs, and refuses one whose blob
// was changed as factline does.
func TestTheForeignNodeReaderReadsAVersion3Export(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (scripts/test-deps installs it with npm): %v", err)
	}
	ctx := testCtx(t)
	src := newBlobStore(ctx, t)
	whole, maps := src.exported(ctx, t)
	changed := bytes.Clone(whole)
	changed[maps[4][1]-10] ^= 1
	dir := t.TempDir()
	v3, bad := filepath.Join(dir, "v3.flx"), filepath.Join(dir, "bad.flx")
	for path, data := range map[string][]byte{v3: whole, bad: changed} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		file  string
		code  int
		lines int
		want  string
	}{
		{v3, 0, 5, ""},
		{bad, 1, 0, "entry 5 ends blob " + string(src.big)},
	} {
		code, lines, errOut := readfactJS(t, node, c.file)
		if code != c.code || lines != c.lines || !strings.Contains(errOut, c.want) {
			t.Errorf("node readfact.js %s: exit %d, %d lines; want %d, %d lines and %q\n%s", c.file, code, lines, c.code, c.lines, c.want, errOut)
		}
	}
}

// The golden version 3 export reads as the three facts and three blobs it
// was written with (a containment record, a request and the next request,
// stored as a delta of it): a change to the reader that stopped reading a
// file this version wrote fails here.
func TestTheGoldenVersion3ExportReads(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "export-v3.flx"))
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	var blobs []events.Digest
	version, err := bus.ReadExportWith(bytes.NewReader(data), bus.ExportVisitor{
		BlobData: true,
		Blob: func(b bus.ExportBlob) error {
			if events.DigestOf(b.Data) != b.Digest || int64(len(b.Data)) != b.Size {
				t.Errorf("blob %s reads as %d bytes that are not it", b.Digest, len(b.Data))
			}
			again, err := bus.ReadExportBlob(bytes.NewReader(data), b)
			if err != nil || !bytes.Equal(again, b.Data) {
				t.Errorf("blob %s read again from where it is: %v", b.Digest, err)
			}
			blobs = append(blobs, b.Digest)
			return nil
		},
		Fact: func(r bus.Raw) error {
			if _, err := r.Fact(); err != nil {
				t.Errorf("entry on %s: %v", r.Subject, err)
			}
			subjects = append(subjects, r.Subject)
			return nil
		},
	})
	if err != nil || version != 3 || len(subjects) != 3 || len(blobs) != 3 || subjects[0] != "fact.golden.r1.run.claimed" {
		t.Errorf("export-v3.flx: version %d, facts %v, blobs %v, %v; want version 3, 3 facts of golden/r1 and 3 blobs", version, subjects, blobs, err)
	}
}

// An export tells a blob the store lost from a digest that names no
// blob: the blob refs (events.BlobRefs) the store does not hold are
// counted and named (message, kind, field, digest); an agent identity, a
// cache identity and an executable's digest are not. Export counted every
// digest it found no blob of, identities among them, and named none.
func TestAnExportNamesTheBlobRefsTheStoreDoesNotHold(t *testing.T) {
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	held, err := b.Blobs().Put(ctx, []byte("request 1"))
	if err != nil {
		t.Fatal(err)
	}
	lost := events.DigestOf([]byte("request 2, never stored"))
	identity := events.DigestOf([]byte("an agent identity"))
	meta := func(pos uint64) events.Meta {
		return events.Meta{Suite: "s", Run: "r1", TaskGeneration: 1, Position: pos,
			Producer: events.Producer{Service: events.OwnerRunner, Instance: "t"}}
	}
	seqs := appendBodies(t, b, meta, []events.Body{
		events.RunClaimed{Runner: "t", Lease: 1, Identity: identity,
			Extensions: []events.Extension{{Name: "x", Command: "/bin/x", Executable: events.DigestOf([]byte("an executable"))}}},
		events.TurnStarted{Turn: 1, ContextDigest: held, Messages: 1},
		events.ModelReplied{Turn: 1, Provider: "p", Text: "ok", CacheIdentity: events.DigestOf([]byte("cache identity"))},
		events.TurnStarted{Turn: 2, ContextDigest: lost, Messages: 2},
		events.TurnStarted{Turn: 3, ContextDigest: lost, Messages: 2},
	})
	res, err := b.ExportWithBlobs(ctx, io.Discard, bus.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []bus.MissingBlob{
		{Seq: seqs[3], Subject: "fact.s.r1.turn.started", Kind: events.KindTurnStarted,
			Ref: events.BlobRef{Field: "context_digest", Digest: lost, Holds: events.HoldsRequest}},
		{Seq: seqs[4], Subject: "fact.s.r1.turn.started", Kind: events.KindTurnStarted,
			Ref: events.BlobRef{Field: "context_digest", Digest: lost, Holds: events.HoldsRequest}},
	}
	if res.Blobs != 1 || res.MissingBlobs != 2 || !slices.Equal(res.Missing, want) {
		t.Fatalf("export: %d blobs, %d missing %+v; want 1 blob, 2 missing %+v", res.Blobs, res.MissingBlobs, res.Missing, want)
	}
}

// appendBodies appends one fact a body to a run, at positions 1, 2, …
// (meta says whose), each expecting the one before, and returns their
// stream sequences.
func appendBodies(t *testing.T, b *bus.Bus, meta func(pos uint64) events.Meta, bodies []events.Body) []uint64 {
	t.Helper()
	ctx := testCtx(t)
	var expect bus.Expect
	var seqs []uint64
	for i, body := range bodies {
		f, err := events.NewFact(meta(uint64(i+1)), body)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := b.Append(ctx, expect, bus.Pending{Fact: f})
		if err != nil {
			t.Fatal(err)
		}
		expect = expect.Then(recs[0].Seq)
		seqs = append(seqs, recs[0].Seq)
	}
	return seqs
}
