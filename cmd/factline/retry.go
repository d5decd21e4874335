package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
	"github.com/factline/factline/services/meter/measure"
)

// newRetryCmd runs again the attempts of a suite that ended as harness
// errors (docs/report.md#retries).
func newRetryCmd() *cobra.Command {
	var o retryFlags
	c := newCommand("retry", nameArgs(1, "name one suite: factline retry SUITE", "suite"))
	fs := onTarget(c, &o.t, oneArg(o.run))
	fs.StringArrayVar(&o.runs, "run", nil, "only the attempt this run belongs to (repeat for several; default: every attempt that ended errored)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "with --store: how long to wait for the retries to be graded")
	return c
}

// retryFlags are retry's flags.
type retryFlags struct {
	t       target
	runs    []string
	timeout time.Duration
}

func (o *retryFlags) run(ctx context.Context, suite string, out, errOut io.Writer) error {
	b, closeBus, err := o.t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	m, err := fleet.OneMeter(b, kit.WithInstance(kit.LocalInstance("retry")))
	if err != nil {
		return err
	}
	retries, err := m.Retry(ctx, suite, o.runs)
	if err != nil {
		return withSuitesHeld(ctx, b, err)
	}
	if len(retries) == 0 {
		fmt.Fprintf(out, "no attempt of %s ended as a harness error%s: nothing to retry\n", suite, only(o.runs))
		return nil
	}
	for _, r := range retries {
		fmt.Fprintf(out, "retrying %s (%s/%s trial %d) as %s\n", r.Of, r.Member.Case, r.Member.Treatment, r.Member.Trial, r.Run)
	}
	if o.t.url != "" {
		fmt.Fprintf(out, "the fleet serving %s runs them; 'factline report %s' shows them once graded\n", redactURL(o.t.url), suite)
		return nil
	}
	// An embedded store: run the retries here, as factline run would.
	f, err := fleet.Start(ctx, b, serveOptions{instances: 2, handedBackListed: runHandedBackListed}.fleetOptions(nil))
	if err != nil {
		return err
	}
	defer f.Stop()
	wait, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := meter.AwaitRetries(wait, b, suite, retries); err != nil {
		return fmt.Errorf("the retries were not all graded: %w (the store keeps them: run 'factline retry %s --store DIR' again to go on)", err, suite)
	}
	r, err := meter.Report(ctx, b, suite)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	return measure.WriteTable(out, r)
}

func only(runs []string) string {
	if len(runs) == 0 {
		return ""
	}
	return fmt.Sprintf(" among %v", runs)
}
