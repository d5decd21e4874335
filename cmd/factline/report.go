package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
)

// runReport prints the meter's report of a suite, finished or running,
// rebuilt from the log.
func runReport(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("report", "report SUITE (--store DIR | --nats URL) [--json | --csv | --svg]", out)
	var t target
	t.flags(fs)
	asJSON := fs.Bool("json", false, "the report as JSON")
	asCSV := fs.Bool("csv", false, "the per-treatment table as CSV")
	asSVG := fs.Bool("svg", false, "an SVG chart of pass rates with interval bars")
	pos, rest := splitPositional(args, 1)
	if err := parse(fs, rest); err != nil {
		return err
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != 1 {
		return usageError{"name one suite: factline report SUITE"}
	}
	if n := countTrue(*asJSON, *asCSV, *asSVG); n > 1 {
		return usageError{"give one of --json, --csv and --svg: the report is written in one format"}
	}
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	r, skipped, err := meter.ReportWithSkipped(ctx, b, pos[0])
	if err != nil {
		return err
	}
	// Machine formats stay parseable on standard output; the warnings go
	// to standard error. The table is for people: they follow it.
	warnTo := io.Writer(os.Stderr)
	switch {
	case *asJSON:
		err = measure.WriteJSON(out, r)
	case *asCSV:
		err = measure.WriteCSV(out, r)
	case *asSVG:
		err = measure.WriteSVG(out, r)
	default:
		warnTo = out
		if err = measure.WriteTable(out, r); err != nil {
			err = fmt.Errorf("report: %w", err)
		}
	}
	if err != nil {
		return err
	}
	for _, bad := range skipped {
		fmt.Fprintf(warnTo, "warning: message %d on %s is left out of the report: %v\n", bad.Seq, bad.Subject, bad.Err)
	}
	return nil
}

// countTrue counts the flags that are set.
func countTrue(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}
