package bus_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// brokenExports returns an honest export of six facts and copies of it
// broken the ways a copy of a log gets broken on its way to an analyst.
func brokenExports(t *testing.T) (whole []byte, broken map[string][]byte) {
	t.Helper()
	ctx := testCtx(t)
	b, _ := bustest.Start(t)
	appendRun(t, b, "s", "r1", 1, 3, bus.Expect{})
	appendRun(t, b, "s", "r2", 1, 3, bus.Expect{})
	var buf bytes.Buffer
	if res, err := b.Export(ctx, &buf, bus.ReadOptions{}); err != nil || res.Messages != 6 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	whole = buf.Bytes()
	var raws []bus.Raw
	if err := bus.ReadExport(bytes.NewReader(whole), func(r bus.Raw) error { raws = append(raws, r); return nil }); err != nil {
		t.Fatal(err)
	}
	// The same entries written again, the fourth repeating the second
	// (same message ID): an export edited by hand.
	var repeated bytes.Buffer
	enc := msgpack.NewEncoder(&repeated)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(enc.Encode(map[string]any{"format": bus.ExportFormat, "version": bus.ExportVersion, "stream": bus.FactsStream, "filter": "fact.>", "created": time.Now()}))
	headerEnd := repeated.Len()
	for i, r := range append(raws[:3:3], raws[1], raws[3]) {
		must(enc.Encode(map[string]any{"seq": uint64(i + 1), "subject": r.Subject, "msg_id": r.MsgID, "time": r.Time, "data": r.Data}))
	}
	// Its end marker agrees with it, as an editor's would: the repeat is
	// all that is wrong with it.
	sum := sha256.Sum256(repeated.Bytes()[headerEnd:])
	must(enc.Encode(map[string]any{"end": true, "entries": 5, "sha256": sum[:]}))
	return whole, map[string][]byte{
		"cut inside its fifth entry": whole[:len(whole)-len(whole)/4],
		"two exports concatenated":   append(bytes.Clone(whole), whole...),
		"an entry repeated":          repeated.Bytes(),
	}
}

// An export that is not whole — cut short on its way, two files run
// together, an entry repeated — is refused before any of it is stored, so
// the store stays empty and the whole file can be imported into it once
// found. It used to be imported up to where the damage was noticed,
// leaving a store that held part of the log and refused every import
// after ("import needs an empty stream"), and a repeated entry was blamed
// on "another writer".
func TestABrokenExportFileImportsNothing(t *testing.T) {
	ctx := testCtx(t)
	whole, broken := brokenExports(t)
	dir := t.TempDir()
	for name, data := range broken {
		b, _ := bustest.Start(t)
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".flx")
		res, err := importFile(ctx, t, b, path, data)
		if err == nil || !strings.Contains(err.Error(), "nothing was imported") || !strings.Contains(err.Error(), "entry") {
			t.Errorf("%s: import = %+v, %v; want it refused, naming the entry, nothing imported", name, res, err)
		}
		if n := factsHeld(t, b); n != 0 || res.Messages != 0 {
			t.Errorf("%s: the store holds %d messages after the refusal (result says %d), want 0", name, n, res.Messages)
		}
		if res, err := b.Import(ctx, bytes.NewReader(whole)); err != nil || res.Messages != 6 {
			t.Errorf("%s: the whole export into the same store: %+v, %v", name, res, err)
		}
	}
}

// From a pipe the file cannot be read twice, so a cut found midway is
// found after messages were stored: the error says how many, that the
// store is no longer empty, and what to do, and the count is what the
// importFile writes data to path and imports it from the open file, as
// 'factline import' does, so that a refusal can name the file.
func importFile(ctx context.Context, t *testing.T, b *bus.Bus, path string, data []byte) (bus.PortResult, error) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("write the export to import: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open the export to import: %v", err)
	}
	defer f.Close()
	return b.Import(ctx, f)
}

// stream holds.
func TestABrokenExportFromAPipeSaysWhatWasStored(t *testing.T) {
	ctx := testCtx(t)
	_, broken := brokenExports(t)
	b, _ := bustest.Start(t)
	res, err := b.Import(ctx, struct{ io.Reader }{bytes.NewReader(broken["cut inside its fifth entry"])})
	if err == nil {
		t.Fatal("a cut export from a pipe was imported without an error")
	}
	held := factsHeld(t, b)
	for _, want := range []string{"entry 5", "4 messages of it were stored", "no longer empty", "new store"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if held != 4 || res.Messages != 4 {
		t.Errorf("the stream holds %d messages and the result says %d, want 4 both", held, res.Messages)
	}

	// A repeated entry is dropped by the server's deduplication, which
	// was blamed on another writer.
	b, _ = bustest.Start(t)
	_, err = b.Import(ctx, struct{ io.Reader }{bytes.NewReader(broken["an entry repeated"])})
	if err == nil || !strings.Contains(err.Error(), "entry 4 repeats the message ID") || strings.Contains(err.Error(), "another writer") || strings.Contains(err.Error(), "end marker") {
		t.Errorf("a repeated entry from a pipe: %v", err)
	}
}

func factsHeld(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	s, err := b.JetStream().Stream(testCtx(t), bus.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
