package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

// loggedFact is a fact as 'factline tail --json' prints it.
type loggedFact struct {
	ID    string          `json:"id"`
	Kind  string          `json:"kind"`
	Suite string          `json:"suite"`
	Run   string          `json:"run"`
	Body  json.RawMessage `json:"body"`
}

// loggedFacts returns a store's facts of one kind, in log order.
func loggedFacts(t *testing.T, store, kind string) []loggedFact {
	t.Helper()
	code, out, errOut := runCLI(t, "tail", "--store", store, "--since", "start", "--no-follow", "--kind", kind, "--json")
	if code != 0 {
		t.Fatalf("tail: %d %s", code, errOut)
	}
	var got []loggedFact
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l struct {
			Fact loggedFact `json:"fact"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("tail line %q: %v", line, err)
		}
		got = append(got, l.Fact)
	}
	return got
}

// exportEdited exports a store, makes same-length byte edits inside the
// encoded fact whose ID is id (each from → to, the first occurrence after
// the fact's start and before the next fact's), rewrites the end marker's
// digest to match, and imports the result into a new store, which it
// returns: what an outsider with a copy of the log, a hex editor and
// sha256sum can do. The export holds the facts only (--no-blobs), so the
// copy holds no case: the audit reads the plans from the facts.
func exportEdited(t *testing.T, store, id string, edits ...[2]string) string {
	t.Helper()
	file := editedExport(t, store, id, "--no-blobs", edits...)
	imported := filepath.Join(filepath.Dir(file), "store")
	if code, out, errOut := runCLI(t, "import", "--store", imported, file); code != 0 {
		t.Fatalf("import of the edited export: %d %s %s", code, out, errOut)
	}
	return imported
}

// editedExport exports a store (with export's further flags, e.g.
// --no-blobs), makes exportEdited's edits in the fact whose ID is id,
// reseals the file and returns its path.
func editedExport(t *testing.T, store, id string, flags string, edits ...[2]string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "log.flx")
	args := []string{"export", "--store", store, "--out", file}
	if flags != "" {
		args = append(args, flags)
	}
	if code, _, errOut := runCLI(t, args...); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// A stored fact of envelope version 4 opens with an 11-element array,
	// the version and its ID as 16 bytes of bin 8 (docs/facts.md).
	open := []byte("\x9b\x04\xc4\x10")
	uid, err := ulid.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	marker := append(slices.Clone(open), uid[:]...)
	start := bytes.Index(data, marker)
	if start < 0 || bytes.Count(data, marker) != 1 {
		t.Fatalf("fact %s is not in the export once", id)
	}
	end := len(data)
	if next := bytes.Index(data[start+len(marker):], open); next >= 0 {
		end = start + len(marker) + next
	}
	for _, e := range edits {
		from, to := []byte(e[0]), []byte(e[1])
		if len(from) != len(to) {
			t.Fatalf("edit %q → %q changes the length", from, to)
		}
		at := bytes.Index(data[start:end], from)
		if at < 0 {
			t.Fatalf("fact %s holds no %q", id, from)
		}
		copy(data[start+at:], to)
	}
	resealExport(t, data)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// The outside report's edit: in an export, a failed grade.verdict is
// flipped to passed and its veto to non-binding, same length, and imported.
// The audit re-derives the verdict from its instrument's result, which
// still says failed, and the suite's report from the log, which no longer
// says what suite.reported recorded: both are violations naming the facts.
// The honest log, and an honest copy of it, audit clean.
func TestAnEditedExportFailsTheAudit(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	if code, out, _ := runCLI(t, "audit", "--store", store, "--finished"); code != 0 {
		t.Fatalf("the honest log: exit %d\n%s", code, out)
	}
	verdict, instrument, reported := cheatFacts(t, store)

	honest := exportEdited(t, store, verdict)
	code, out, _ := runCLI(t, "audit", "--store", honest, "--finished")
	if code != 0 || !strings.Contains(out, "the cases of 2 runs are not in this store") {
		t.Fatalf("an honest copy: exit %d\n%s", code, out)
	}
	// A copy imported from an export with its blobs holds the cases.
	withBlobs, copied := filepath.Join(t.TempDir(), "log.flx"), t.TempDir()
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", withBlobs); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI(t, "import", "--store", copied, withBlobs); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "audit", "--store", copied, "--finished"); code != 0 || strings.Contains(out, "not in this store") {
		t.Fatalf("an honest copy with its blobs: exit %d\n%s", code, out)
	}

	// Envelope versions 3 and 4 write body keys by number (docs/facts.md): "type"
	// is 35 (0x23), "binding" 143 (0xcc 0x8f).
	edited := exportEdited(t, store, verdict,
		[2]string{"\x23\xa6failed", "\x23\xa6passed"},
		[2]string{"\xcc\x8f\xc3", "\xcc\x8f\xc2"})
	code, out, _ = runCLI(t, "audit", "--store", edited, "--finished")
	if code != 1 {
		t.Fatalf("the edited copy: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"verdict-derived", verdict, "records passed, the rules derive failed", "tests@1 failed (fact " + instrument,
		"report-derived", reported, "attempts=2 passed=1 failed=1", "attempts=2 passed=2 failed=0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit does not say %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "report", "cheat", "--store", edited, "--json")
	if code != 0 || !strings.Contains(out, `"passed": 2`) {
		t.Fatalf("the edit did not reach the copy's report (so the test proves nothing): %d\n%s", code, out)
	}
}

// A re-run's cached reply edited in a copy of the log (same length: "4"
// becomes "5") no longer says what the turn it cites said: the audit names
// the hit and its origin. Audited one suite at a time, the honest re-run
// is checked against the origins in the other suite.
func TestAnEditedCachedReplyFailsTheAudit(t *testing.T) {
	t.Setenv("FACTLINE_OPENAI_API_KEY", "sk-test-cache")
	fake := newFakeOpenAI(t)
	store, dir := t.TempDir(), t.TempDir()
	rw := "cache: {mode: read_write}\n"
	runCached(t, store, cacheSuite(t, dir, "first", "name: m1, temperature: 0", rw, fake), fake)
	if _, n := runCached(t, store, cacheSuite(t, dir, "again", "name: m1, temperature: 0", rw, fake), fake); n != 0 {
		t.Fatalf("the re-run made %d model calls, want 0", n)
	}
	if code, out, _ := runCLI(t, "audit", "--suite", "again", "--store", store, "--finished"); code != 0 {
		t.Fatalf("the honest re-run, audited alone: exit %d\n%s", code, out)
	}
	var hit, origin string
	for _, f := range loggedFacts(t, store, "model.replied") {
		if strings.Contains(string(f.Body), "holds 4") {
			switch f.Suite {
			case "again":
				hit = f.ID
			case "first":
				origin = f.ID
			}
		}
	}
	if hit == "" || origin == "" {
		t.Fatalf("no cached reply (%q) and origin (%q) that say holds 4", hit, origin)
	}
	edited := exportEdited(t, store, hit, [2]string{"holds 4", "holds 5"})
	for _, args := range [][]string{{"audit", "--store", edited}, {"audit", "--suite", "again", "--store", edited}} {
		code, out, _ := runCLI(t, args...)
		if code != 1 {
			t.Fatalf("%v: exit %d, want 1\n%s", args, code, out)
		}
		for _, want := range []string{"again/a-t-t1: cache-origin", hit, "first/a-t-t1 turn 2 (fact " + origin, "the text"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v does not say %q:\n%s", args, want, out)
			}
		}
	}
}

// cheatFacts returns the IDs of the cheat case's failed verdict, of its
// last instrument result and of the suite's report, in a store that ran
// testdata/tiny/cheat.yaml: the facts the edited-export tests change.
func cheatFacts(t *testing.T, store string) (verdict, instrument, reported string) {
	t.Helper()
	for _, f := range loggedFacts(t, store, "grade.verdict") {
		if strings.HasPrefix(f.Run, "cheat-") && strings.Contains(string(f.Body), `"result":{"type":"failed"}`) {
			verdict = f.ID
		}
	}
	for _, f := range loggedFacts(t, store, "grade.instrument") {
		if strings.HasPrefix(f.Run, "cheat-") {
			instrument = f.ID
		}
	}
	for _, f := range loggedFacts(t, store, "suite.reported") {
		reported = f.ID
	}
	if verdict == "" || instrument == "" || reported == "" {
		t.Fatalf("the log lacks a failed verdict (%q), its result (%q) or a report (%q)", verdict, instrument, reported)
	}
	return verdict, instrument, reported
}
