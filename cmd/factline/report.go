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
	var by string
	var wide bool
	c := newCommand("report", nameArgs(1, "name one suite: factline report SUITE", "suite"))
	fs := onTarget(c, &t, oneArg(func(ctx context.Context, suite string, out, errOut io.Writer) error {
		if n := countTrue(asJSON, asCSV, asSVG); n > 1 {
			return usageError{"give one of --json, --csv and --svg: the report is written in one format"}
		}
		switch by {
		case "", "treatment":
		case "case":
			if asSVG {
				return usageError{"--by case has no chart: give --json, --csv or neither"}
			}
		default:
			return usageError{fmt.Sprintf("--by %q: want treatment or case", by)}
		}
		if wide && (asJSON || asCSV || asSVG || by == "case") {
			return usageError{"--wide is the treatment table's: JSON, CSV and --by case have every column already"}
		}
		return runReport(ctx, &t, suite, reportFormat{asJSON, asCSV, asSVG, by == "case", wide}, out, errOut)
	}))
	fs.BoolVar(&asJSON, "json", false, "the report as JSON")
	fs.BoolVar(&asCSV, "csv", false, "the per-treatment table as CSV")
	fs.BoolVar(&asSVG, "svg", false, "an SVG chart of pass rates with interval bars, each labelled N passed of M graded")
	fs.BoolVar(&wide, "wide", false, "the table with every column (pending, invalid, harness errors, clustered SE, pass@k for 1, 2, 5, 10 … n, wall, evaluator cost)")
	fs.StringVar(&by, "by", "treatment", "treatment (the report) or case: one row per case and treatment with its trials, pass rate, pass@1, pass@n and usage")
	return c
}

// reportFormat is the one format report writes (none set: the table).
type reportFormat struct{ json, csv, svg, byCase, wide bool }

func runReport(ctx context.Context, t *target, suite string, format reportFormat, out, errOut io.Writer) error {
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	r, skipped, err := meter.ReportWithSkipped(ctx, b, suite)
	if err != nil {
		return withSuitesHeld(ctx, b, err)
	}
	// Machine formats stay parseable on standard output; the warnings go
	// to standard error. The table is for people: they follow it.
	warnTo := errOut
	switch {
	case format.byCase && format.json:
		err = measure.WriteCaseJSON(out, measure.ByCase(r))
	case format.byCase && format.csv:
		err = measure.WriteCaseCSV(out, measure.ByCase(r))
	case format.byCase:
		warnTo = out
		err = measure.WriteCaseTable(out, measure.ByCase(r))
	case format.wide:
		warnTo = out
		err = measure.WriteWideTable(out, r)
	case format.json:
		err = measure.WriteJSON(out, r)
	case format.csv:
		err = measure.WriteCSV(out, r)
	case format.svg:
		err = measure.WriteSVG(out, r)
	default:
		warnTo = out
		err = measure.WriteTable(out, r)
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
