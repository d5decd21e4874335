package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// A finished run prints the report the meter stored, not one rebuilt by
// reading the whole suite again (that read was the peak of a large
// suite's memory), when nothing but suite.reported facts follows the
// facts the report folded; when a fact of the suite follows them, it
// rebuilds. A store whose newest stored report says another name than
// the log's proves which one is printed: run again on it, the same
// command reattaches and prints the report.
func TestRunPrintsTheStoredReportWhenNothingFollowsIt(t *testing.T) {
	store := t.TempDir()
	suite := writeTrialsSuite(t, 3)
	printed := func() string {
		t.Helper()
		code, out, errOut := runCLI(t, "run", suite, "--store", store, "--fsync", "interval", "--json")
		if code != 0 {
			t.Fatalf("run exited %d: %s\n%s", code, errOut, out)
		}
		var r struct{ Name string }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("the report does not parse: %v\n%s", err, out)
		}
		return r.Name
	}
	rebuilt := printed()

	// The meter's report folded facts through some sequence; a report
	// stored after it under another name, through the same sequence, is
	// the one to print.
	through := storeReport(t, store, "stored", func(meters events.SuiteReported) uint64 { return meters.Through })
	if got := printed(); got != "stored" {
		t.Fatalf("run printed the report named %q, want the stored one's, %q (the rebuilt one is %q)", got, "stored", rebuilt)
	}
	// One stored through the sequence before: the fact at through follows
	// it, and the report is rebuilt from the log.
	storeReport(t, store, "stale", func(events.SuiteReported) uint64 { return through - 1 })
	if got := printed(); got != rebuilt {
		t.Fatalf("run printed the report named %q, want the rebuilt one's, %q: a fact follows the stored report", got, rebuilt)
	}
}

// storeReport stores, in a store no process holds, the suite mem's report
// as the meter first stored it under another name, and appends a
// suite.reported of it, as the meter, through the sequence through
// returns from the meter's own suite.reported. It returns the meter's
// through.
func storeReport(t *testing.T, store, name string, through func(events.SuiteReported) uint64) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, done := openStoreBus(ctx, t, store)
	defer done()
	scope, err := b.LoadRun(ctx, "mem", events.SuiteScope)
	if err != nil {
		t.Fatal(err)
	}
	var meters events.SuiteReported
	for _, rec := range scope.Records {
		if sr, ok := rec.Fact.Body.(events.SuiteReported); ok && meters.ReportDigest == "" {
			meters = sr
		}
	}
	if meters.Through == 0 {
		t.Fatalf("the meter's suite.reported records no through: %+v", meters)
	}
	data, err := b.Blobs().Get(ctx, meters.ReportDigest)
	if err != nil {
		t.Fatal(err)
	}
	var r measure.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	r.Name = name
	if data, err = measure.EncodeJSON(r); err != nil {
		t.Fatal(err)
	}
	digest, err := b.Blobs().Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	body := r.Reported(digest)
	body.Through = through(meters)
	_, err = b.Commit(ctx, nil, "mem", events.SuiteScope, func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: "mem", Run: events.SuiteScope, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerMeter, Instance: "test"}}, body)
		return []bus.Pending{{Fact: f}}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return meters.Through
}

// A report blob of any bytes decodes to an error, or to a report that is
// not taken (ok false), or to one that encodes back to those very bytes:
// never to a report that prints other than what the blob says.
func FuzzDecodeStoredReport(f *testing.F) {
	f.Add([]byte(`{"suite":"s"}`))
	f.Add([]byte("{\n  \"suite\": \"s\",\n  \"name\": \"\"\n}\n"))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, ok, err := decodeStoredReport(data)
		if err != nil || !ok {
			return
		}
		again, err := measure.EncodeJSON(r)
		if err != nil || string(again) != string(data) {
			t.Fatalf("taken, but encodes back to other bytes: %v\n%q\n%q", err, data, again)
		}
	})
}

// Printing the table, run reads the stored report keeping only the rows
// the table names; the table is the one the whole report rebuilt from
// the log gives.
func TestRunPrintsTheTableOfTheWholeReport(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	code, out, errOut := runCLI(t, "run", "../../examples/demo/suite.yaml", "--store", store, "--fsync", "interval")
	if code != 0 {
		t.Fatalf("run exited %d: %s\n%s", code, errOut, out)
	}
	code, table, errOut := runCLI(t, "report", "demo", "--store", store)
	if code != 0 || !strings.Contains(table, "pass rate") {
		t.Fatalf("report exited %d: %s\n%s", code, errOut, table)
	}
	if !strings.Contains(out, table) {
		t.Errorf("run printed\n%s\nnot the rebuilt report's table\n%s", out, table)
	}
}
