package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// purgeBlob deletes the object of blob d from a store's blob bucket, as a
// lost or hand-cleaned object store would.
func purgeBlob(t *testing.T, store string, d events.Digest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, done := openStoreBus(ctx, t, store)
	defer done()
	obj, err := b.JetStream().ObjectStore(ctx, bus.BlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.Delete(ctx, d.Hex()); err != nil {
		t.Fatalf("delete blob %s: %v", d, err)
	}
}

// A suite's store whose request blob was deleted: the audit names the
// fact (sequence, kind, field, digest) under blob-held, and an export
// names it as missing, instead of counting it among identities. The same
// store before the deletion audits clean and exports no missing blob:
// every digest BlobRefs lists names a blob the services stored. The audit
// checked no blob, and export's count mixed identities with lost blobs.
func TestALostRequestBlobFailsTheAuditAndIsNamedByExport(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI(t, "audit", "--store", store, "--finished"); code != 0 || strings.Contains(out, "blob") {
		t.Fatalf("the healthy store: exit %d\n%s%s", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "log.flx")
	if code, out, errOut := runCLI(t, "export", "--store", store, "--out", file); code != 0 || strings.Contains(out, "missing") || strings.Contains(out, "identities") {
		t.Fatalf("export of the healthy store: exit %d\n%s%s", code, out, errOut)
	}

	// The last request of the log: no later request is stored as a delta
	// of it.
	started := loggedFacts(t, store, "turn.started")
	last := started[len(started)-1]
	var body struct {
		ContextDigest events.Digest `json:"context_digest"`
	}
	if err := json.Unmarshal(last.Body, &body); err != nil || body.ContextDigest == "" {
		t.Fatalf("turn.started body %s: %v", last.Body, err)
	}
	purgeBlob(t, store, body.ContextDigest)

	code, out, _ := runCLI(t, "audit", "--store", store, "--finished")
	if code != 1 {
		t.Fatalf("the store without the request: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"cheat/" + last.Run + ": blob-held: message ", "(turn.started) field context_digest names blob " + string(body.ContextDigest), "a turn's request"} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit does not say %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "blob-held"); n != 1 {
		t.Errorf("%d blob-held violations, want 1:\n%s", n, out)
	}
	code, out, _ = runCLI(t, "audit", "--store", store, "--json")
	var doc struct {
		Holds        bool `json:"holds"`
		BlobsChecked bool `json:"blobs_checked"`
		Violations   []struct{ Rule, Run, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.Holds || !doc.BlobsChecked ||
		len(doc.Violations) != 1 || doc.Violations[0].Rule != "blob-held" || doc.Violations[0].Run != last.Run {
		t.Fatalf("audit --json: %d %v\n%s", code, err, out)
	}

	code, out, errOut := runCLI(t, "export", "--store", store, "--out", file)
	if code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	for _, want := range []string{"1 reference of the facts names a blob the store does not hold",
		"missing blob: message ", "(turn.started) field context_digest: " + string(body.ContextDigest) + ", a turn's request"} {
		if !strings.Contains(out, want) {
			t.Errorf("export does not say %q:\n%s", want, out)
		}
	}
}

// A request blob stored as a delta (bus/blobdeltas.go) is read by
// rebuilding it on its base: with the base purged, the delta's object is
// still there (Stat finds it) but the blob cannot be read, and an export,
// which reads it whole, fails. The audit names the fact, the field, the
// blob and the missing base under blob-held. Before, only the base's own
// fact was named (its blob is gone too), and the request stored as a
// delta of it passed as held.
func TestADeltaWhoseBaseWasPurgedFailsTheAudit(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	request := func(f loggedFact) events.Digest {
		var body struct {
			ContextDigest events.Digest `json:"context_digest"`
		}
		if err := json.Unmarshal(f.Body, &body); err != nil || body.ContextDigest == "" {
			t.Fatalf("turn.started body %s: %v", f.Body, err)
		}
		return body.ContextDigest
	}
	// A turn's request is stored as a delta of the run's request before
	// it (the runner's PutAfter): find one that is, the last in the log.
	started := loggedFacts(t, store, "turn.started")
	var delta, base events.Digest
	var run string
	func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b, done := openStoreBus(ctx, t, store)
		defer done()
		prev := map[string]events.Digest{}
		for _, f := range started {
			d := request(f)
			st, err := b.Blobs().Stat(ctx, d)
			if err != nil {
				t.Fatalf("stat %s: %v", d, err)
			}
			if p, ok := prev[f.Run]; ok && st.Depth > 0 && p != d {
				delta, base, run = d, p, f.Run
			}
			prev[f.Run] = d
		}
	}()
	if delta == "" {
		t.Fatalf("no request of the %d turns is stored as a delta", len(started))
	}
	purgeBlob(t, store, base)

	code, out, _ := runCLI(t, "audit", "--store", store, "--finished")
	if code != 1 {
		t.Fatalf("the store without the base: exit %d, want 1\n%s", code, out)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "names blob "+string(delta)) {
			line = l
		}
	}
	for _, want := range []string{"cheat/" + run + ": blob-held: message ", "(turn.started) field context_digest names blob " + string(delta),
		"a turn's request", "delta of blob " + string(base) + ", which the store does not hold"} {
		if !strings.Contains(line, want) {
			t.Errorf("the audit's line on the delta %s does not say %q:\n%s", delta, want, out)
		}
	}
	// The base's own fact is named as before: its blob is gone.
	if !strings.Contains(out, "names blob "+string(base)) {
		t.Errorf("the audit does not name the purged base's own fact:\n%s", out)
	}
	// The export, which reads the blob whole, fails on it: what the rule
	// now says.
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", filepath.Join(t.TempDir(), "log.flx")); code == 0 || !strings.Contains(errOut, string(base)) {
		t.Errorf("export of the store without the base: exit %d, want a failure naming the base:\n%s", code, errOut)
	}
}
