package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
)

// namedBlobs reads an export and returns the requests its turn.started
// facts name, the containment records its run.claimed facts name, and a
// run with a turn.
func namedBlobs(t *testing.T, path string) (requests, containments map[events.Digest]bool, suite, run string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	requests, containments = map[events.Digest]bool{}, map[events.Digest]bool{}
	err = bus.ReadExport(f, func(raw bus.Raw) error {
		fact, err := raw.Fact()
		if err != nil {
			return err
		}
		switch b := fact.Body.(type) {
		case events.TurnStarted:
			requests[b.ContextDigest] = true
			suite, run = fact.Suite, fact.Run
		case events.RunClaimed:
			if b.ContainmentDigest != "" {
				containments[b.ContainmentDigest] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return requests, containments, suite, run
}

// An export of a real suite's store, imported into a fresh store, gives a
// store that holds every request and containment record its facts name,
// and view --file shows each turn's request from the file itself. An
// export used to carry facts only: the fresh store named blobs it did not
// hold, and the viewer of the file said "an export file holds facts only"
// where each request should be.
func TestAnExportOfASuiteCarriesTheBlobsItsFactsName(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/suite.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	export := filepath.Join(t.TempDir(), "tiny.flx")
	code, out, errOut := runCLI(t, "export", "--store", store, "--out", export)
	if code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	t.Logf("%s", strings.TrimSpace(out))
	requests, containments, suite, run := namedBlobs(t, export)
	if len(requests) == 0 || len(containments) == 0 {
		t.Fatalf("the suite's facts name %d requests and %d containment records; want some of each", len(requests), len(containments))
	}
	t.Logf("the facts name %d requests and %d containment records", len(requests), len(containments))

	fresh := t.TempDir()
	if code, out, errOut := runCLI(t, "import", "--store", fresh, "--fsync", "interval", export); code != 0 {
		t.Fatalf("import: %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	func() {
		b, done := openStoreBus(ctx, t, fresh)
		defer done()
		served := 0
		for _, set := range []map[events.Digest]bool{requests, containments} {
			for d := range set {
				// Get checks the bytes against the digest.
				if _, err := b.Blobs().Get(ctx, d); err != nil {
					t.Errorf("the imported store: %v", err)
					continue
				}
				served++
			}
		}
		if served != len(requests)+len(containments) {
			t.Errorf("the imported store serves %d of the %d blobs the facts name", served, len(requests)+len(containments))
		}
	}()

	url := startView(t, "--file", export)
	status, page := fetch(t, url+"suites/"+suite+"/runs/"+run)
	if status != http.StatusOK || strings.Contains(page, "holds facts only") || !strings.Contains(page, `role-user`) {
		t.Errorf("view --file: the page of run %s/%s does not show its requests (%d):\n%.2000s", suite, run, status, page)
	}
	for d := range requests {
		status, body := fetch(t, url+"blobs/"+d.Hex())
		if status != http.StatusOK || events.DigestOf([]byte(body)) != d {
			t.Errorf("view --file: blob %s: %d, %d bytes that are not it", d, status, len(body))
		}
	}
	// An export written without blobs still reads, and its viewer says
	// where the requests are, as before.
	factsOnly := filepath.Join(t.TempDir(), "facts.flx")
	if code, out, errOut := runCLI(t, "export", "--store", store, "--out", factsOnly, "--no-blobs"); code != 0 || !strings.Contains(out, "facts only") {
		t.Fatalf("export --no-blobs: %d %s %s", code, out, errOut)
	}
	url2 := startView(t, "--file", factsOnly)
	if status, page := fetch(t, url2+"suites/"+suite+"/runs/"+run); status != http.StatusOK || !strings.Contains(page, "an export file holds facts only") {
		t.Errorf("view --file of a facts-only export: the run page (%d) does not say the file holds facts only:\n%.2000s", status, page)
	}
	// replay --file reads the blobs' entries past, as the store's facts.
	_, fromStore, _ := runCLI(t, "replay", "runs", "--store", store, "--json")
	code, fromFile, errOut := runCLI(t, "replay", "runs", "--file", export, "--json")
	if code != 0 || fromFile != fromStore || !strings.Contains(fromFile, run) {
		t.Errorf("replay --file of the export: %d %s\n%s\nwant\n%s", code, errOut, fromFile, fromStore)
	}
}
