package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// The report a finished 'factline run' prints is the blob its
// suite.reported names. A suite.reported whose counts agree with the log
// naming a blob that says something else (here a usage figure changed:
// the suite's tokens) used to pass the audit, of the store and of its
// export alike: only the counts the fact carries were re-derived. So did
// an export whose run.ended was edited to spend a token more (resealed):
// the counts do not move. The blob is held to the log too.
func TestAuditHoldsTheReportBlobToTheLog(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	// An export whose run.ended says the run spent one token more: its
	// report blob, built from the spend as it was, no longer is the
	// report the file's log rebuilds, though every count agrees.
	ended := loggedFacts(t, store, "run.ended")[0]
	var spent struct {
		Spent struct{ Tokens uint64 } `json:"spent"`
	}
	if err := json.Unmarshal(ended.Body, &spent); err != nil || spent.Spent.Tokens == 0 {
		t.Fatalf("run.ended %s spent no tokens (%v): %s", ended.ID, err, ended.Body)
	}
	// A stored body is keyed by field numbers: tokens is 91
	// (docs/facts.md), its value the shortest uint.
	tokens := func(n uint64) string {
		var b bytes.Buffer
		enc := msgpack.NewEncoder(&b)
		enc.UseCompactInts(true)
		if err := enc.EncodeUint(n); err != nil {
			t.Fatal(err)
		}
		return "\x5b" + b.String()
	}
	n := spent.Spent.Tokens
	more := n + 1
	if len(tokens(more)) != len(tokens(n)) {
		more = n - 1
	}
	edited := editedExport(t, store, ended.ID, "", [2]string{tokens(n), tokens(more)})
	code, out, errOut := runCLI(t, "audit", "--file", edited, "--finished")
	if code != 1 || !strings.Contains(out, "report-derived") || !strings.Contains(out, "none of the reports rebuilt") {
		t.Fatalf("the audit of an export whose run.ended spent a token more: exit %d, want 1 under report-derived\n%s%s", code, out, errOut)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	forged := func() events.Digest {
		s, err := bus.OpenEmbedded(ctx, store, bus.StoreOptions{Durability: bus.SyncInterval})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		b := s.Bus()
		scope, err := b.LoadRun(ctx, "cheat", events.SuiteScope)
		if err != nil {
			t.Fatal(err)
		}
		var honest events.SuiteReported
		for _, rec := range scope.Records {
			if sr, ok := rec.Fact.Body.(events.SuiteReported); ok {
				honest = sr
			}
		}
		data, err := b.Blobs().Get(ctx, honest.ReportDigest)
		if err != nil {
			t.Fatal(err)
		}
		r, err := measure.ReadJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		tokens := uint64(1)
		r.Treatments[0].Usage.Tokens = &tokens
		edited, err := measure.EncodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		d, err := b.Blobs().Put(ctx, edited)
		if err != nil {
			t.Fatal(err)
		}
		body := honest
		body.ReportDigest = d
		f, err := events.NewFact(events.Meta{Suite: "cheat", Run: events.SuiteScope, Position: scope.NextPosition(),
			Producer: events.Producer{Service: events.OwnerMeter, Instance: "forger"}}, body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Append(ctx, scope.Expect(), bus.Pending{Fact: f}); err != nil {
			t.Fatal(err)
		}
		return d
	}()

	code, out, errOut = runCLI(t, "audit", "--store", store, "--finished")
	if code != 1 || !strings.Contains(out, "report-derived") || !strings.Contains(out, string(forged)) || !strings.Contains(out, "none of the reports rebuilt") {
		t.Fatalf("the audit of a store whose report blob says other than its log: exit %d, want 1 naming %s under report-derived\n%s%s", code, forged, out, errOut)
	}
	file := t.TempDir() + "/log.flx"
	if code, _, errOut := runCLI(t, "export", "--store", store, "--out", file); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	code, out, errOut = runCLI(t, "audit", "--file", file, "--finished")
	if code != 1 || !strings.Contains(out, "report-derived") || !strings.Contains(out, string(forged)) {
		t.Fatalf("the audit of its export: exit %d, want 1 naming %s under report-derived\n%s%s", code, forged, out, errOut)
	}
}
