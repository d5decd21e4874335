package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// The report a finished 'factline run' prints is the blob its
// suite.reported names. A suite.reported whose counts agree with the log
// naming a blob that says something else (here a usage figure changed:
// the suite's tokens) used to pass the audit, of the store and of its
// export alike: only the counts the fact carries were re-derived. The
// blob is held to the log too.
func TestAuditHoldsTheReportBlobToTheLog(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "run", "testdata/tiny/cheat.yaml", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
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

	code, out, errOut := runCLI(t, "audit", "--store", store, "--finished")
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
