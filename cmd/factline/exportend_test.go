package main

import (
	"bytes"
	"crypto/sha256"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// An export copied short, cut exactly between two entries, is refused by
// 'factline import' (exit 2, the store left empty) and by 'replay --file'
// (exit 1, nothing printed), each naming the file and the entry it ends
// after. It used to read as a whole, shorter log.
func TestAnExportCutBetweenEntriesIsRefusedByImportAndReplay(t *testing.T) {
	t.Parallel()
	dir, whole, data := demoExport(t)
	// Where the header and the first 10 entries end.
	r := bytes.NewReader(data)
	dec := msgpack.NewDecoder(r)
	for range 11 {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
	}
	cut := filepath.Join(dir, "cut.flx")
	if err := os.WriteFile(cut, data[:len(data)-r.Len()], 0o644); err != nil {
		t.Fatal(err)
	}
	want := "the export ends after entry 10 without its end marker: the file was cut"
	fresh := filepath.Join(dir, "copy")
	code, out, errOut := runCLI(t, "import", "--store", fresh, "--fsync", "interval", cut)
	if code != 2 || !strings.Contains(errOut, want) || !strings.Contains(errOut, cut) || !strings.Contains(errOut, "nothing was imported") {
		t.Errorf("import of an export cut after entry 10: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "replay", "runs", "--file", cut, "--json")
	if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, cut) || out != "" {
		t.Errorf("replay --file of an export cut after entry 10: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// The other readers of an export file read it through the same
	// reader, and refuse it with the same words.
	for _, args := range [][]string{
		{"trace", "--file", cut, "--otlp-endpoint", "http://127.0.0.1:1"},
		{"view", "--file", cut},
		{"compare", "demo@" + cut, "demo@" + whole},
	} {
		code, out, errOut := runCLI(t, args...)
		if code == 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, cut) {
			t.Errorf("factline %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
	}
	if code, out, errOut := runCLI(t, "import", "--store", fresh, "--fsync", "interval", whole); code != 0 || !strings.Contains(out, "imported 15 messages") {
		t.Fatalf("the whole export into the same store: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// A version 1 export, written before exports had an end marker, still
// imports and replays; import warns that a cut between its entries could
// not be told from its end.
func TestAVersion1ExportStillImportsWithAWarning(t *testing.T) {
	t.Parallel()
	golden := filepath.Join("..", "..", "bus", "testdata", "export-v1.flx")
	code, out, errOut := runCLI(t, "import", "--store", t.TempDir(), "--fsync", "interval", golden)
	if code != 0 || !strings.Contains(out, "imported 5 messages") {
		t.Fatalf("import of a version 1 export: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "version 1 export") || !strings.Contains(errOut, "cannot be told from its end") {
		t.Errorf("import of a version 1 export does not warn that a cut cannot be seen:\nstderr: %s", errOut)
	}
	code, out, errOut = runCLI(t, "replay", "runs", "--file", golden, "--json")
	if code != 0 || !strings.Contains(out, "golden") {
		t.Errorf("replay --file of a version 1 export: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// 'factline trace --file' sends spans as it reads; of an export that
// turns out not to be whole it sent the spans of what came before the
// damage, then failed. It checks the file whole first, so a receiver
// gets nothing of a cut file: not even a connection.
func TestTraceOfACutExportSendsNothing(t *testing.T) {
	dir, _, data := demoExport(t)
	cut := filepath.Join(dir, "cut.flx")
	if err := os.WriteFile(cut, data[:len(data)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	// A receiver that counts who connects and answers nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	defer func(d time.Duration) { exportTimeout = d }(exportTimeout)
	exportTimeout = 2 * time.Second
	code, out, errOut := runCLI(t, "trace", "--file", cut, "--otlp-endpoint", "http://"+ln.Addr().String())
	// The entry the cut falls in depends on how many blobs the demo's
	// export carries; that it names one is what matters.
	if code != 1 || !regexp.MustCompile(`the file ends inside entry \d+`).MatchString(errOut) || !strings.Contains(errOut, cut) {
		t.Errorf("trace of a cut export: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("trace of a cut export connected %d times to the receiver: it sent what it read before the cut", n)
	}
}

// demoExport exports the store of a demo run to demo.flx in a fresh
// directory and returns the directory, the file and its bytes, for tests
// that write a damaged copy of it beside the original.
func demoExport(t *testing.T) (dir, whole string, data []byte) {
	t.Helper()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	dir = t.TempDir()
	whole = filepath.Join(dir, "demo.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", whole); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatalf("read the export: %v", err)
	}
	return dir, whole, data
}

// resealExport rewrites the end marker of a version 2 export whose
// entries were edited in place to the digest of the entries as they are
// now: what a forger who edits a copy does, since the marker proves a
// copy whole, not honest (that is the audit's to find).
func resealExport(t *testing.T, data []byte) {
	t.Helper()
	r := bytes.NewReader(data)
	dec := msgpack.NewDecoder(r)
	var first, last int
	for i := 0; r.Len() > 0; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decode the export's maps: %v", err)
		}
		if i == 0 {
			first = len(data) - r.Len()
		}
		if m["end"] == true {
			// sha256 is the marker's last field: 32 bytes of bin 8.
			sum := sha256.Sum256(data[first:last])
			if !bytes.HasSuffix(data[:len(data)-32], []byte("\xa6sha256\xc4\x20")) || r.Len() != 0 {
				t.Fatal("the end marker does not end with its sha256, last in the file")
			}
			copy(data[len(data)-32:], sum[:])
			return
		}
		last = len(data) - r.Len()
	}
	t.Fatal("the export has no end marker")
}
