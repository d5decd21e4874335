package main

import (
	"context"
	"fmt"
	"io"

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
	b, closeBus, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	r, err := meter.Report(ctx, b, pos[0])
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		return measure.WriteJSON(out, r)
	case *asCSV:
		return measure.WriteCSV(out, r)
	case *asSVG:
		return measure.WriteSVG(out, r)
	}
	if err := measure.WriteTable(out, r); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
