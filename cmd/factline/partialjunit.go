package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/services/meter"
)

// partialJUnitWithin bounds how long a run cut off (--timeout, SIGTERM,
// Ctrl-C) spends writing its --junit file: a CI runner that sent SIGTERM
// kills the job for good after a grace period of its own.
const partialJUnitWithin = 15 * time.Second

// writePartialJUnit writes --junit's file for a suite not measured to its
// end: its report rebuilt from the log, what ran so far, the attempts not
// settled skipped as awaiting (docs/report.md#junit). It works on after
// ctx is cancelled, since an interrupt is what brings it here. A report
// that cannot be rebuilt in time, or a file that cannot be written (a
// disk that filled during the run), leaves no file, and says so on
// errOut: the run still ends as cut off, with its own status and
// message (docs/cli.md#exit-status).
func (o *runOptions) writePartialJUnit(ctx context.Context, b *bus.Bus, suite string, errOut io.Writer) {
	if o.gates.junit == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), partialJUnitWithin)
	defer cancel()
	r, err := meter.Report(ctx, b, suite)
	if err != nil {
		fmt.Fprintf(errOut, "--junit %s not written: the report of what ran could not be rebuilt: %v\n", o.gates.junit, err)
		return
	}
	if err := o.gates.writeJUnit(r); err != nil {
		fmt.Fprintf(errOut, "%v\n", err)
		return
	}
	fmt.Fprintf(errOut, "wrote --junit %s: what ran so far, the attempts not settled skipped as awaiting\n", o.gates.junit)
}
