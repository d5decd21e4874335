package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/events"
)

// auditVerdict is the last line of a plain audit's output: the verdict.
func auditVerdict(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// An analyst handed an export audits it as it stands, without importing
// it into a store: a healthy suite's export (version 3) audits clean with
// the verdict line of its store, its cases read from the file's blobs and
// every blob checked; the same export with a failed verdict flipped to
// passed (resealed) fails naming the verdict and the report; an export
// written --no-blobs (version 2) audits clean but says blob-held was not
// checked and the cases were not in it; and --file beside --store is a
// usage error. Before, audit had no --file (exit 2, unknown flag).
func TestAuditFileReadsAnExportAsTheStore(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	code, fromStore, errOut := runCLI(t, "audit", "--store", store, "--finished")
	if code != 0 {
		t.Fatalf("the store: exit %d\n%s%s", code, fromStore, errOut)
	}
	file := filepath.Join(t.TempDir(), "log.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", file); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	code, fromFile, errOut := runCLI(t, "audit", "--file", file, "--finished")
	if code != 0 || auditVerdict(fromFile) != auditVerdict(fromStore) || strings.Contains(fromFile, "note:") {
		t.Fatalf("audit --file of the healthy export: exit %d, want 0 and %q without a note\n%s%s", code, auditVerdict(fromStore), fromFile, errOut)
	}
	code, out, errOut := runCLI(t, "audit", "--file", file, "--finished", "--json")
	var doc struct {
		Holds        bool `json:"holds"`
		Facts        int  `json:"facts"`
		CasesUnknown int  `json:"cases_unknown"`
		BlobsChecked bool `json:"blobs_checked"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || !doc.Holds || doc.Facts == 0 || doc.CasesUnknown != 0 || !doc.BlobsChecked {
		t.Fatalf("audit --file --json: exit %d (%v)\n%s%s", code, err, out, errOut)
	}
	// The scope flags read the file as they read the store.
	if code, out, errOut := runCLI(t, "audit", "--file", file, "--suite", "cheat"); code != 0 || auditVerdict(out) != auditVerdict(fromStore) {
		t.Errorf("audit --file --suite cheat: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "audit", "--file", file, "--suite", "nosuch"); code != 1 || !strings.Contains(errOut, `suite "nosuch"`) || !strings.Contains(errOut, file) {
		t.Errorf("audit --file --suite nosuch: exit %d, want 1 naming the suite and the file\n%s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "audit", "--file", file, "--store", store); code != 2 || !strings.Contains(errOut, "only one") {
		t.Errorf("audit --file --store: exit %d, want 2\n%s", code, errOut)
	}

	// A failed verdict flipped to passed, and its veto to non-binding
	// (TestAnEditedExportFailsTheAudit's edit), in the file with blobs.
	verdict, instrument, reported := cheatFacts(t, store)
	flip := [][2]string{{"\x23\xa6failed", "\x23\xa6passed"}, {"\xcc\x8f\xc3", "\xcc\x8f\xc2"}}
	edited := editedExport(t, store, verdict, "", flip...)
	code, out, errOut = runCLI(t, "audit", "--file", edited, "--finished")
	if code != 1 {
		t.Fatalf("the edited export: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"verdict-derived", verdict, "records passed, the rules derive failed", "tests@1 failed (fact " + instrument,
		"report-derived", reported, "attempts=2 passed=1 failed=1", "attempts=2 passed=2 failed=0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit of the edited export does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "note:") {
		t.Errorf("the audit of a version 3 export says a note:\n%s", out)
	}

	// The facts only: nothing to check blobs against, no cases.
	factsOnly := editedExport(t, store, verdict, "--no-blobs")
	code, out, errOut = runCLI(t, "audit", "--file", factsOnly, "--finished")
	if code != 0 || auditVerdict(out) != auditVerdict(fromStore) {
		t.Fatalf("the export --no-blobs: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"blobs the facts name", "blob-held was not checked", "the cases of 2 runs are not in the export " + factsOnly} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit of an export --no-blobs does not say %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "audit", "--file", factsOnly, "--json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || !doc.Holds || doc.BlobsChecked || doc.CasesUnknown != 2 {
		t.Errorf("audit --json of an export --no-blobs: exit %d (%v)\n%s", code, err, out)
	}
}

// changeBlob flips the last byte of blob d's (last) part in an export
// file and reseals it: the part's data is its entry's last field.
func changeBlob(t *testing.T, file string, d events.Digest) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(data)
	dec := msgpack.NewDecoder(r)
	for r.Len() > 0 {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decode the export's maps: %v", err)
		}
		if m["blob"] == string(d) {
			if part, _ := m["data"].([]byte); len(part) == 0 {
				t.Fatalf("blob %s's part holds no bytes", d)
			}
			data[len(data)-r.Len()-1] ^= 1
			resealExport(t, data)
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("the export holds no blob %s", d)
}

// A version 3 export is checked against its own blobs: one whose store
// had lost a turn's request (so the file lacks it) fails under blob-held
// naming the fact, the field and the digest; one whose request blob's
// bytes were changed (resealed) is refused in import's words, naming the
// file, the entry and the blob, with nothing audited (exit 1, as every
// --file reader refuses a broken export).
func TestAuditFileChecksTheExportsBlobs(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	started := loggedFacts(t, store, "turn.started")
	last := started[len(started)-1]
	var body struct {
		ContextDigest events.Digest `json:"context_digest"`
	}
	if err := json.Unmarshal(last.Body, &body); err != nil || body.ContextDigest == "" {
		t.Fatalf("turn.started body %s: %v", last.Body, err)
	}

	changed := filepath.Join(t.TempDir(), "changed.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", changed); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	changeBlob(t, changed, body.ContextDigest)
	code, out, errOut := runCLI(t, "audit", "--file", changed, "--finished")
	if code != 1 || out != "" {
		t.Errorf("a changed blob: exit %d, want 1 and nothing audited\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"nothing was audited", changed, "entry ", string(body.ContextDigest), "the blob was changed"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal of a changed blob does not say %q:\n%s", want, errOut)
		}
	}

	purgeBlob(t, store, body.ContextDigest)
	lost := filepath.Join(t.TempDir(), "lost.flx")
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", lost); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	code, out, errOut = runCLI(t, "audit", "--file", lost, "--finished")
	if code != 1 {
		t.Fatalf("an export without a request: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"cheat/" + last.Run + ": blob-held: message ", "(turn.started) field context_digest names blob " + string(body.ContextDigest),
		"a turn's request, which the export does not hold"} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit does not say %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "blob-held"); n != 1 {
		t.Errorf("%d blob-held violations, want 1:\n%s", n, out)
	}
}

// A re-run's cached replies cite the suite it re-ran: audited from an
// export with --suite, the hits are checked against the origins the file
// holds in the other suite (as the store form loads them), so the honest
// re-run holds; with a hit edited in the file ("4" becomes "5"), the audit
// names the hit and its origin, whole or one suite at a time.
func TestAuditFileChecksCachedRepliesAgainstTheFile(t *testing.T) {
	t.Setenv("FACTLINE_OPENAI_API_KEY", "sk-test-cache")
	fake := newFakeOpenAI(t)
	store, dir := t.TempDir(), t.TempDir()
	rw := "cache: {mode: read_write}\n"
	runCached(t, store, cacheSuite(t, dir, "first", "name: m1, temperature: 0", rw, fake), fake)
	if _, n := runCached(t, store, cacheSuite(t, dir, "again", "name: m1, temperature: 0", rw, fake), fake); n != 0 {
		t.Fatalf("the re-run made %d model calls, want 0", n)
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
	honest := editedExport(t, store, hit, "")
	if code, out, errOut := runCLI(t, "audit", "--suite", "again", "--file", honest, "--finished"); code != 0 || strings.Contains(out, "note:") {
		t.Fatalf("the honest re-run, audited alone from the file: exit %d\n%s%s", code, out, errOut)
	}
	edited := editedExport(t, store, hit, "", [2]string{"holds 4", "holds 5"})
	for _, args := range [][]string{{"audit", "--file", edited}, {"audit", "--suite", "again", "--file", edited}} {
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
