package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// maxOutputBytesARow bounds what a finished run that writes its report
// (--json, --out) holds a row of it, while it writes it and after: the
// rows stream from the stored blob to the files, and the run holds the
// report's figures and the rows the table names. Holding every row to
// write them held ~600 bytes a row (measure's
// TestReadJSONKeepingHoldsOnlyTheRowsKept).
const maxOutputBytesARow = 64

// storeReportOf stores r as the meter reports a suite: its blob, and a
// suite.reported through the fact before it, so that a finished run
// takes it as the log's report (storedReport). It returns r's JSON.
func storeReportOf(ctx context.Context, t *testing.T, b *bus.Bus, r measure.Report) []byte {
	t.Helper()
	through := commitSuiteFact(ctx, t, b, r.Suite, events.OwnerSubmitter, events.SuiteSubmitted{Name: r.Suite,
		SpecDigest: events.DigestOf([]byte("spec")), Trials: r.Trials, Split: "dev", Cases: []events.Ref{{ID: "c", Digest: events.DigestOf([]byte("c"))}},
		Treatments: []events.Ref{{ID: "t", Digest: events.DigestOf([]byte("t"))}}})
	return storeReportThrough(ctx, t, b, r, through)
}

// storeReportThrough stores r's blob and a suite.reported of it, as the
// meter, through the sequence through. It returns r's JSON.
func storeReportThrough(ctx context.Context, t *testing.T, b *bus.Bus, r measure.Report, through uint64) []byte {
	t.Helper()
	data, err := measure.EncodeJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := b.Blobs().Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	body := r.Reported(digest)
	body.Through = through
	commitSuiteFact(ctx, t, b, r.Suite, events.OwnerMeter, body)
	return data
}

// commitSuiteFact commits a fact of the suite's scope as owner, and
// returns its sequence.
func commitSuiteFact(ctx context.Context, t *testing.T, b *bus.Bus, suite string, owner events.Owner, body events.Body) uint64 {
	t.Helper()
	recs, err := b.Commit(ctx, nil, suite, events.SuiteScope, func(log bus.RunLog) ([]bus.Pending, error) {
		f, err := events.NewFact(events.Meta{Suite: suite, Run: events.SuiteScope, Position: log.NextPosition(),
			Producer: events.Producer{Service: owner, Instance: "test"}}, body)
		return []bus.Pending{{Fact: f}}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs[len(recs)-1].Seq
}

// heapProbe is a writer that reads the live heap once, when half of
// the bytes it expects have passed through it (a Write, never a
// ReadFrom: io.Copy hands it every byte).
type heapProbe struct {
	buf  bytes.Buffer
	at   int
	live uint64
}

func (p *heapProbe) Write(b []byte) (int, error) {
	before := p.buf.Len()
	n, err := p.buf.Write(b)
	if before < p.at && p.buf.Len() >= p.at {
		p.live = liveHeapNow()
	}
	return n, err
}

// A finished run that writes its report (--json and --out) writes the
// stored report's bytes without holding its rows: its JSON and
// report.json are the blob's bytes, report.csv and report.svg the
// report's, and what the run holds while it writes them, and after, is
// within maxOutputBytesARow a row.
func TestARunWritesItsReportWithoutHoldingItsRows(t *testing.T) {
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const rows = 3000
	r := measure.Report{Suite: "s", Name: "s", Split: "dev", Trials: rows, Complete: true, Cases: []string{"c"},
		Treatments: []measure.TreatmentReport{{Treatment: "t", Planned: rows, Started: rows, Ended: rows, Graded: rows, Passed: rows}}}
	for i := range rows {
		tokens := uint64(105)
		r.Attempts = append(r.Attempts, measure.AttemptRow{Run: "c-t-" + string(rune('a'+i%26)), Case: "c", Treatment: "t",
			Trial: uint32(i + 1), Status: events.RunDone, EndReason: "the agent said it was done", Outcome: measure.OutcomePassed,
			Tokens: &tokens, Revision: 1, Started: true})
	}
	data := storeReportOf(ctx, t, b, r)
	var csv, svg bytes.Buffer
	if err := measure.WriteCSV(&csv, r); err != nil {
		t.Fatal(err)
	}
	if err := measure.WriteSVG(&svg, r); err != nil {
		t.Fatal(err)
	}
	r = measure.Report{}

	// Once first, so that what the bus keeps of its first reads (its
	// consumers, the run log's cache) is in the base the heap is held to.
	if _, err := (&runOptions{asJSON: true, outDir: t.TempDir()}).writeOutputs(ctx, b, "s", io.Discard, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := &runOptions{asJSON: true, outDir: dir}
	out := &heapProbe{at: len(data) / 2}
	out.buf.Grow(len(data))
	base := liveHeapNow()
	got, err := o.writeOutputs(ctx, b, "s", out, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	held := int64(liveHeapNow()) - int64(base)
	runtime.KeepAlive(got)
	writing := int64(out.live) - int64(base)
	t.Logf("%d rows: held while writing --json %d KiB, after %d KiB", rows, writing>>10, held>>10)

	if !bytes.Equal(out.buf.Bytes(), data) {
		t.Fatalf("--json wrote %d bytes, not the stored report's %d", out.buf.Len(), len(data))
	}
	for name, want := range map[string][]byte{"report.json": data, "report.csv": csv.Bytes(), "report.svg": svg.Bytes()} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(b, want) {
			t.Fatalf("%s: %d bytes (%v), want the report's %d", name, len(b), err, len(want))
		}
	}
	if got.Treatments[0].Passed != rows {
		t.Fatalf("the report held: %+v", got.Treatments)
	}
	if out.live == 0 || writing > maxOutputBytesARow*rows {
		t.Errorf("writing --json held %d bytes, %d a row, more than %d", writing, writing/rows, maxOutputBytesARow)
	}
	if held > maxOutputBytesARow*rows {
		t.Errorf("the run holds %d bytes after writing its report, %d a row, more than %d", held, held/rows, maxOutputBytesARow)
	}
}
