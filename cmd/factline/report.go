package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
)

// newReportCmd prints the meter's report of a suite, finished or
// running, rebuilt from the log.
func newReportCmd() *cobra.Command {
	var t target
	var asJSON, asCSV, asSVG bool
	c := &cobra.Command{
		Use:     "report SUITE",
		Short:   "print the meter's report of a suite, rebuilt from the log",
		Example: "  factline report demo --store /tmp/fl --svg > demo.svg",
		Args:    exactArgs(1, "name one suite: factline report SUITE"),
		RunE: func(c *cobra.Command, args []string) error {
			if n := countTrue(asJSON, asCSV, asSVG); n > 1 {
				return usageError{"give one of --json, --csv and --svg: the report is written in one format"}
			}
			return runReport(c.Context(), &t, args[0], reportFormat{asJSON, asCSV, asSVG}, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fs := c.Flags()
	t.flags(fs)
	fs.BoolVar(&asJSON, "json", false, "the report as JSON")
	fs.BoolVar(&asCSV, "csv", false, "the per-treatment table as CSV")
	fs.BoolVar(&asSVG, "svg", false, "an SVG chart of pass rates with interval bars")
	return c
}

// reportFormat is the one format report writes (none set: the table).
type reportFormat struct{ json, csv, svg bool }

func runReport(ctx context.Context, t *target, suite string, format reportFormat, out, errOut io.Writer) error {
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	r, skipped, err := meter.ReportWithSkipped(ctx, b, suite)
	if err != nil {
		return err
	}
	// Machine formats stay parseable on standard output; the warnings go
	// to standard error. The table is for people: they follow it.
	warnTo := errOut
	switch {
	case format.json:
		err = measure.WriteJSON(out, r)
	case format.csv:
		err = measure.WriteCSV(out, r)
	case format.svg:
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
