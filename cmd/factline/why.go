package main

import (
	"fmt"
	"io"

	"github.com/factline/factline/services/meter/measure"
)

// writeWhys says, under a report's table, every reason that made runs
// harness errors or excluded (measure.Whys): the table counts them, this
// says why, with one run to look at for each reason.
func writeWhys(out io.Writer, r measure.Report) error {
	whys := measure.Whys(r)
	if len(whys) == 0 {
		return nil
	}
	// The suite is named: a run ID is unique within its suite only, and
	// --run alone would show every suite's run of the ID.
	if _, err := fmt.Fprintf(out, "\nwhy runs were harness errors or excluded (factline view, or replay history --suite %s --run RUN, shows a run):\n", r.Suite); err != nil {
		return err
	}
	width := 0
	for _, w := range whys {
		width = max(width, len(w.Kind))
	}
	for _, w := range whys {
		runs := fmt.Sprintf("1 run: %s", w.Example)
		if w.Runs > 1 {
			runs = fmt.Sprintf("%d runs, e.g. %s", w.Runs, w.Example)
		}
		if _, err := fmt.Fprintf(out, "  %-*s  %s (%s)\n", width, w.Kind, w.Reason, runs); err != nil {
			return err
		}
	}
	return nil
}
