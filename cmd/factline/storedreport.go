package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
)

// finalReport is the report a finished run prints: the one the meter
// stored, when it is provably the log's report now (storedReport), with
// its blob, or else rebuilt from the log (a zero storedBlob). Rebuilding a
// suite of 100,000 runs decodes its ~1.5 million facts once more, after
// the meter has folded them all: the peak of a large suite's memory
// (docs/benchmarks.md). keep, when not nil, says which attempt rows of the
// stored report to hold (the rebuilt one holds every row): a run that
// prints only the table needs few of them (measure.KeptForTheTable), and
// may count the others as they pass (the JUnit file's head). spool, when
// not nil, is handed the stored blob's bytes as they are read: when the
// stored report is the one returned, it holds them all, the report's
// JSON, and the rows written to files are written from it, never held
// (reportJSON, writeStoredJUnit).
func finalReport(ctx context.Context, b *bus.Bus, suite string, keep func(*measure.AttemptRow) bool,
	spool io.Writer) (measure.Report, storedBlob, error) {
	if r, blob, err := storedReport(ctx, b, suite, keep, spool); err == nil && blob.digest != "" {
		return r, blob, nil
	}
	// Any failure to prove the stored report current (an older meter, a
	// fact after it, a read that failed) leaves the rebuild, which says
	// what is wrong if the log cannot be read either.
	r, err := meter.Report(ctx, b, suite)
	return r, storedBlob{}, err
}

// storedBlob names the stored report a finished run prints: its blob's
// digest, and the sequence of the newest fact the meter folded into it
// (suite.reported's through), after which the suite holds no fact the
// report could count.
type storedBlob struct {
	digest  events.Digest
	through uint64
}

// errNotOnlyReports stops storedReport's read at the first fact that is
// not a suite.reported.
var errNotOnlyReports = errors.New("a fact of the suite follows the report's")

// storedReport returns the report blob the suite's newest suite.reported
// names, decoded, with that blob's digest and through, when nothing the report could
// count was committed after the facts it folded: every fact of the suite
// after its through is a suite.reported (which no report counts). It
// reads the suite's facts after through, not the suite. The digest is ""
// when the meter recorded no through, when through is not before the suite.reported (a
// copy of the log with other sequences), when a fact follows it (a grade
// owed after the report, a regrade: the meter reports again, or the
// rebuild counts it), or when the blob does not encode back to its own
// bytes (a report this build does not decode whole).
func storedReport(ctx context.Context, b *bus.Bus, suite string, keep func(*measure.AttemptRow) bool, spool io.Writer) (measure.Report, storedBlob, error) {
	scope, err := b.LoadRun(ctx, suite, events.SuiteScope)
	if err != nil {
		return measure.Report{}, storedBlob{}, fmt.Errorf("the suite's reports: %w", err)
	}
	var newest events.SuiteReported
	var at uint64
	for _, rec := range scope.Records {
		// Only the meter reports a suite: a suite.reported of another
		// producer names nothing this trusts.
		if sr, ok := rec.Fact.Body.(events.SuiteReported); ok && rec.Fact.Producer.Service == events.OwnerMeter {
			newest, at = sr, rec.Seq
		}
	}
	if at == 0 || newest.Through == 0 || newest.Through >= at {
		return measure.Report{}, storedBlob{}, nil
	}
	_, err = b.Read(ctx, bus.ReadOptions{Filter: events.SuiteFilter(suite), FromSeq: newest.Through + 1}, func(raw bus.Raw) error {
		if _, run, kind, err := events.ParseFactSubject(raw.Subject); err != nil || run != events.SuiteScope || kind != events.KindSuiteReported {
			return errNotOnlyReports
		}
		return nil
	})
	switch {
	case errors.Is(err, errNotOnlyReports):
		return measure.Report{}, storedBlob{}, nil
	case err != nil:
		return measure.Report{}, storedBlob{}, fmt.Errorf("the suite after its report: %w", err)
	}
	r, ok, err := readStoredReportSpooling(ctx, b, newest.ReportDigest, keep, spool)
	switch {
	case err != nil:
		return measure.Report{}, storedBlob{}, fmt.Errorf("the report blob %s: %w", newest.ReportDigest, err)
	case !ok:
		return measure.Report{}, storedBlob{}, nil
	}
	return r, storedBlob{digest: newest.ReportDigest, through: newest.Through}, nil
}

// readStoredReport decodes the report blob named d (measure.WriteJSON's
// form) as it streams from the store, holding the report and never its
// JSON: a 100,000-run report's JSON is ~50 MB, which the whole-blob read
// held next to its decoding and its encoding again. The store checks the blob's digest
// as it streams; ok is false when the report decoded does not encode back
// to the blob's bytes, which their digests say (the encoding's is hashed
// as the rows pass): what prints from it must be what the blob says, and
// a field the blob holds that this build's Report does not would be lost.
func readStoredReport(ctx context.Context, b *bus.Bus, d events.Digest) (measure.Report, bool, error) {
	return readStoredReportKeeping(ctx, b, d, nil)
}

// readStoredReportKeeping is readStoredReport holding only the rows keep
// returns true for (nil: every row).
func readStoredReportKeeping(ctx context.Context, b *bus.Bus, d events.Digest, keep func(*measure.AttemptRow) bool) (measure.Report, bool, error) {
	return readStoredReportSpooling(ctx, b, d, keep, nil)
}

// readStoredReportSpooling is readStoredReportKeeping writing the blob's
// bytes to spool (when not nil) as they stream: with ok, spool holds them
// all, which are WriteJSON's of the whole report.
func readStoredReportSpooling(ctx context.Context, b *bus.Bus, d events.Digest, keep func(*measure.AttemptRow) bool, spool io.Writer) (measure.Report, bool, error) {
	pr, pw := io.Pipe()
	got := make(chan error, 1)
	go func() {
		var w io.Writer = pw
		if spool != nil {
			w = io.MultiWriter(spool, pw)
		}
		_, err := b.Blobs().GetTo(ctx, d, w)
		pw.CloseWithError(err)
		got <- err
	}()
	r, again, rerr := measure.ReadJSONKeeping(pr, keep)
	if rerr == nil {
		// The store checks the digest at the blob's end: read to it.
		_, rerr = io.Copy(io.Discard, pr)
	}
	pr.CloseWithError(errReportRead)
	if err := <-got; err != nil && !errors.Is(err, errReportRead) {
		return measure.Report{}, false, err
	}
	if rerr != nil {
		return measure.Report{}, false, rerr
	}
	if again != d {
		return measure.Report{}, false, nil
	}
	return r, true, nil
}

// decodeStoredReport decodes a report blob's bytes as readStoredReport
// decodes them from the store.
func decodeStoredReport(data []byte) (measure.Report, bool, error) {
	r, again, err := measure.ReadJSONKeeping(bytes.NewReader(data), nil)
	if err != nil {
		return measure.Report{}, false, err
	}
	if again != events.DigestOf(data) {
		return measure.Report{}, false, nil
	}
	return r, true, nil
}

// errReportRead stops the store's stream of a report blob its reader
// has stopped reading.
var errReportRead = errors.New("the report's reader stopped")
