package events_test

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// The foreign reader reads a version 2 export (docs/operations.md,
// "Export and import") only when it is whole: its end marker is there,
// counts the entries, holds the sha256 of their bytes, and nothing
// follows it. Otherwise it prints none of the file's entries, names the
// file with what is wrong, and exits 1.
func TestTheForeignNodeReaderRefusesAVersion2ExportThatIsNotWhole(t *testing.T) {
	names := []string{"run_claimed", "stop_decided_finish", "grade_verdict_passed"}
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	header := enc(map[string]any{"format": "factline-export", "version": 2, "stream": "FACTS", "filter": "fact.>", "created": time.Now()})
	var entries [][]byte
	for i, name := range names {
		data := readFile(t, filepath.Join(goldenV3Dir, name+".msgpack"))
		entries = append(entries, enc(map[string]any{"seq": 10 + i, "subject": "fact.s.r." + name, "msg_id": name, "time": time.Now(), "data": data}))
	}
	export := func(n int, end []byte) []byte {
		return append(append(bytes.Clone(header), bytes.Join(entries[:n], nil)...), end...)
	}
	trailer := func(n int, sum []byte) []byte {
		return enc(map[string]any{"end": true, "entries": n, "sha256": sum})
	}
	all := sha256.Sum256(bytes.Join(entries, nil))
	two := sha256.Sum256(bytes.Join(entries[:2], nil))
	whole := export(3, trailer(3, all[:]))
	files := map[string][]byte{
		"cut-between.flx": export(2, nil),
		"no-end.flx":      export(3, nil),
		"counts-4.flx":    export(3, trailer(4, all[:])),
		"wrong-sum.flx":   export(3, trailer(3, two[:])),
		"after-end.flx":   append(bytes.Clone(whole), whole...),
	}
	wants := map[string]string{
		"cut-between.flx": "the export ends after entry 2 without its end marker: the file was cut",
		"no-end.flx":      "the export ends after entry 3 without its end marker",
		"counts-4.flx":    "the end marker after entry 3 counts 4 entries",
		"wrong-sum.flx":   "the end marker's sha256 disagrees with the 3 entries",
		"after-end.flx":   "bytes follow the end marker after entry 3",
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "whole.flx")
	if err := os.WriteFile(good, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	code, lines, stderr := nodeReader(t, good)
	if code != 0 || len(lines) != len(names) || lines[2]["subject"] != "fact.s.r.grade_verdict_passed" {
		t.Fatalf("node on a whole version 2 export: exit %d, %v\n%s", code, lines, stderr)
	}
	var args []string
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	code, lines, stderr = nodeReader(t, args...)
	if code != 1 || len(lines) != 0 {
		t.Errorf("node on version 2 exports that are not whole: exit %d, %d lines; want 1 and none", code, len(lines))
	}
	for name, want := range wants {
		if !strings.Contains(stderr, filepath.Join(dir, name)+": "+want) {
			t.Errorf("%s: standard error does not name the file with %q:\n%s", name, want, stderr)
		}
	}
}
