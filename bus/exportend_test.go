package bus_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
)

// entryEnds returns the offsets in an export at which its header and
// each of its first n entries end: where a copy cut exactly between two
// entries stops.
func entryEnds(t *testing.T, export []byte, n int) []int {
	t.Helper()
	r := bytes.NewReader(export)
	dec := msgpack.NewDecoder(r)
	var ends []int
	for range n + 1 {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decode the export's maps: %v", err)
		}
		ends = append(ends, len(export)-r.Len())
	}
	return ends
}

// A copy of an export cut exactly between two entries (a full disk, an
// interrupted copy) is refused, naming the file and the entry it ends
// after, and nothing of it is stored. It used to read as a whole, shorter
// export and import without a word.
func TestAnExportCutBetweenEntriesIsRefused(t *testing.T) {
	ctx := testCtx(t)
	src, _ := bustest.Start(t)
	appendRun(t, src, "s", "r1", 1, 3, bus.Expect{})
	appendRun(t, src, "s", "r2", 1, 3, bus.Expect{})
	var buf bytes.Buffer
	if res, err := src.Export(ctx, &buf, bus.ReadOptions{}); err != nil || res.Messages != 6 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	whole := buf.Bytes()
	ends := entryEnds(t, whole, 6)
	dir := t.TempDir()
	b, _ := bustest.Start(t)
	for _, n := range []int{0, 3, 6} {
		path := filepath.Join(dir, "cut"+string(rune('0'+n))+".flx")
		res, err := importFile(ctx, t, b, path, whole[:ends[n]])
		want := "the export ends after entry " + string(rune('0'+n)) + " without its end marker: the file was cut"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "nothing was imported") {
			t.Errorf("cut after entry %d: import = %+v, %v; want it refused with %q naming %s", n, res, err, want, path)
		}
		var ee *bus.ExportError
		if !errors.As(err, &ee) || !errors.Is(err, bus.ErrExportCut) || ee.File != path || ee.Entries != n {
			t.Errorf("cut after entry %d: the error is not an *ExportError of kind ErrExportCut naming the file and %d entries: %#v", n, n, ee)
		}
		if held := factsHeld(t, b); held != 0 || res.Messages != 0 {
			t.Fatalf("cut after entry %d: the store holds %d messages (result %d), want 0", n, held, res.Messages)
		}
	}

	// From a pipe the file cannot be checked first: the cut is found at
	// its end, after what came before it was stored, and the error says
	// so as for any damage found midway.
	res, err := b.Import(ctx, struct{ io.Reader }{bytes.NewReader(whole[:ends[3]])})
	if !errors.Is(err, bus.ErrExportCut) || !strings.Contains(err.Error(), "3 messages of it were stored") || res.Messages != 3 {
		t.Errorf("an export cut after entry 3 from a pipe: %+v, %v", res, err)
	}
}

// sixFactExport returns an export of six facts and the offsets where its
// header and each entry end.
func sixFactExport(t *testing.T) ([]byte, []int) {
	t.Helper()
	src, _ := bustest.Start(t)
	appendRun(t, src, "s", "r1", 1, 3, bus.Expect{})
	appendRun(t, src, "s", "r2", 1, 3, bus.Expect{})
	var buf bytes.Buffer
	if res, err := src.Export(testCtx(t), &buf, bus.ReadOptions{}); err != nil || res.Messages != 6 || res.Version != 2 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	return buf.Bytes(), entryEnds(t, buf.Bytes(), 6)
}

// An export whose end marker disagrees with what comes before it, or that
// goes on after it, is refused whole, saying what is wrong, and nothing of
// it is stored.
func TestAnExportWhoseEndDoesNotMatchIsRefused(t *testing.T) {
	ctx := testCtx(t)
	whole, ends := sixFactExport(t)
	entries := whole[ends[0]:ends[6]]
	trailer := func(n int, sum []byte) []byte {
		b, err := msgpack.Marshal(map[string]any{"end": true, "entries": n, "sha256": sum})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	right := sha256.Sum256(entries)
	changed := bytes.Clone(whole)
	changed[ends[2]-1] ^= 0xff // the last byte of entry 2's data
	cases := map[string]struct {
		data []byte
		want string
	}{
		"a trailer that counts 5":     {append(bytes.Clone(whole[:ends[6]]), trailer(5, right[:])...), "the end marker after entry 6 counts 5 entries"},
		"a trailer that counts 7":     {append(bytes.Clone(whole[:ends[6]]), trailer(7, right[:])...), "the end marker after entry 6 counts 7 entries"},
		"an entry changed":            {changed, "the end marker's sha256 disagrees with the 6 entries before it"},
		"an entry dropped":            {append(append(bytes.Clone(whole[:ends[2]]), whole[ends[3]:ends[6]]...), trailer(5, right[:])...), "sha256 disagrees with the 5 entries"},
		"a byte after the end":        {append(bytes.Clone(whole), 0xc0), "bytes follow the end marker after entry 6"},
		"two exports run together":    {append(bytes.Clone(whole), whole...), "bytes follow the end marker after entry 6"},
		"an end marker in the middle": {append(append(bytes.Clone(whole[:ends[3]]), trailer(3, nil)...), whole[ends[3]:]...), "the end marker's sha256 disagrees with the 3 entries"},
	}
	dir := t.TempDir()
	b, _ := bustest.Start(t)
	for name, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".flx")
		res, err := importFile(ctx, t, b, path, c.data)
		if err == nil || !errors.Is(err, bus.ErrExportBadEnd) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: import = %+v, %v; want ErrExportBadEnd saying %q and naming the file", name, res, err, c.want)
		}
		if held := factsHeld(t, b); held != 0 || res.Messages != 0 {
			t.Fatalf("%s: the store holds %d messages (result %d), want 0", name, held, res.Messages)
		}
	}
	if res, err := b.Import(ctx, bytes.NewReader(whole)); err != nil || res.Messages != 6 || res.Version != 2 {
		t.Errorf("the whole export: %+v, %v", res, err)
	}
}

// A version 1 export, written by the code before exports had an end
// marker (testdata/export-v1.flx), still imports whole, and the result
// says it is version 1 so that the caller can warn that a cut between
// its entries could not have been seen.
func TestAVersion1ExportStillImports(t *testing.T) {
	ctx := testCtx(t)
	f, err := os.Open(filepath.Join("testdata", "export-v1.flx"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := bustest.Start(t)
	res, err := b.Import(ctx, f)
	if err != nil || res.Messages != 5 || res.Version != 1 || len(res.Flagged) != 0 {
		t.Fatalf("import of the version 1 golden export: %+v, %v; want 5 messages, version 1", res, err)
	}
	log, err := b.LoadRun(ctx, "golden", "r1")
	if err != nil || len(log.Records) != 3 {
		t.Fatalf("run golden/r1 after the import: %d facts, %v; want 3", len(log.Records), err)
	}
}

// docs/readfact.js, the foreign reader, reads what Export writes (its
// digest agrees with Go's) and the version 1 golden file, and refuses a
// copy of the first cut between two entries.
func TestTheForeignNodeReaderReadsWhatExportWrites(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (scripts/test-deps installs it with npm): %v", err)
	}
	whole, ends := sixFactExport(t)
	dir := t.TempDir()
	v2, cut := filepath.Join(dir, "v2.flx"), filepath.Join(dir, "cut.flx")
	if err := os.WriteFile(v2, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, whole[:ends[4]], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file  string
		code  int
		lines int
		want  string
	}{
		{v2, 0, 6, ""},
		{filepath.Join("testdata", "export-v1.flx"), 0, 5, ""},
		{cut, 1, 0, "the export ends after entry 4 without its end marker"},
	} {
		code, lines, errOut := readfactJS(t, node, c.file)
		if code != c.code || lines != c.lines || !strings.Contains(errOut, c.want) {
			t.Errorf("node readfact.js %s: exit %d, %d lines; want %d, %d lines and %q\n%s", c.file, code, lines, c.code, c.lines, c.want, errOut)
		}
	}
}

// readfactJS runs docs/readfact.js, the foreign reader of the docs, on
// file, and returns its exit code, the lines it printed and its stderr.
func readfactJS(t *testing.T, node, file string) (code, lines int, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(node, "../docs/readfact.js", file)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, strings.Count(out.String(), "\n"), errOut.String()
}
