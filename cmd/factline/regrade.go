package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/cases/caseload"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/meter"
)

// newRegradeCmd grades a suite's runs again under changed instruments,
// appending new grade revisions (docs/grading.md#regrading).
func newRegradeCmd() *cobra.Command {
	var o regradeFlags
	c := &cobra.Command{
		Use:   "regrade SUITE --grading FILE",
		Short: "grade a suite's runs again under changed instruments: new grade revisions, earlier ones kept",
		Example: "  factline regrade demo --grading tests-v2.yaml --store /tmp/fl\n" +
			"  factline regrade demo --grading tests-v2.yaml --run fix-sum-stall-on-t1 --instrument tests --nats nats://10.0.0.5:4222",
		Args: exactArgs(1, "name one suite: factline regrade SUITE --grading FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			return o.run(c.Context(), args[0], c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fs := c.Flags()
	o.t.flags(fs)
	fs.StringVar(&o.grading, "grading", "", "a grading section (instruments: …) whose instruments replace the case's of the same id")
	fs.StringArrayVar(&o.runs, "run", nil, "only this run (repeat for several; default: every ended run of the suite)")
	fs.StringArrayVar(&o.instruments, "instrument", nil, "only this instrument of --grading (repeat for several; default: all of them)")
	fs.StringVar(&o.workDir, "work-dir", "", "where command instruments run (default: the OS temp dir)")
	return c
}

// regradeFlags are regrade's flags.
type regradeFlags struct {
	t                 target
	grading, workDir  string
	runs, instruments []string
}

func (o *regradeFlags) run(ctx context.Context, suite string, out, errOut io.Writer) error {
	if o.grading == "" {
		return usageError{"--grading FILE is required: the instruments to grade with"}
	}
	data, err := cases.ReadInput(o.grading, cases.MaxFileBytes, "a grading file")
	if err != nil {
		return fmt.Errorf("--grading: %w", err)
	}
	var with cases.Grading
	if err := cases.DecodeYAML(o.grading, data, &with); err != nil {
		return err
	}
	for _, id := range o.instruments {
		if !slices.ContainsFunc(with.Instruments, func(in cases.Instrument) bool { return in.ID == id }) {
			return usageError{fmt.Sprintf("--instrument %s: %s has no instrument with that id", id, o.grading)}
		}
	}
	b, closeBus, err := o.t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	r, err := meter.Report(ctx, b, suite)
	if err != nil {
		return err
	}
	if len(r.Attempts) == 0 {
		return fmt.Errorf("suite %q has no runs in this log", suite)
	}
	var runs []string
	for _, a := range r.Attempts {
		if a.Status != "" && (len(o.runs) == 0 || slices.Contains(o.runs, a.Run)) {
			runs = append(runs, a.Run)
		}
	}
	for _, want := range o.runs {
		if !slices.Contains(runs, want) {
			return fmt.Errorf("--run %s: no ended run of suite %s has that id", want, suite)
		}
	}
	opts := []kit.Option{kit.WithInstance(kit.LocalInstance("regrade"))}
	if o.workDir != "" {
		opts = append(opts, grader.WithWorkDir(o.workDir))
	}
	g, err := fleet.OneGrader(b, opts...)
	if err != nil {
		return err
	}
	policies := caseload.New(0)
	changed, regraded := 0, 0
	for _, run := range runs {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return err
		}
		before := latestVerdict(log.Facts())
		req, _ := log.Requested()
		eff, err := policies.ForRequest(ctx, b, req)
		if err != nil {
			return fmt.Errorf("%s: %w", run, err)
		}
		grading, touched := merged(eff.Case.Grading, with, o.instruments)
		if !touched {
			fmt.Fprintf(out, "%s: skipped, its case %s has none of the instruments regraded\n", run, req.Case)
			continue
		}
		regraded++
		if err := g.Regrade(ctx, suite, run, grading); err != nil {
			return fmt.Errorf("regrade %s: %w", run, err)
		}
		log, err = b.LoadRun(ctx, suite, run)
		if err != nil {
			return err
		}
		after := latestVerdict(log.Facts())
		if after.Revision != before.Revision {
			changed++
			fmt.Fprintf(out, "%s: revision %d, %s (was revision %d, %s)\n", run, after.Revision, after.Result.Type(), before.Revision, before.Result.Type())
		} else {
			fmt.Fprintf(out, "%s: unchanged at revision %d, %s\n", run, after.Revision, after.Result.Type())
		}
	}
	fmt.Fprintf(out, "regraded %d of %d runs of %s, %d with a new revision; 'factline report %s' reads them\n", regraded, len(runs), suite, changed, suite)
	return nil
}

// merged is the case's grading with each instrument of with (or only those
// named) replacing the case's of the same id. touched says whether any
// did: an instrument the case never had is not added to it.
func merged(own *cases.Grading, with cases.Grading, only []string) (*cases.Grading, bool) {
	if own == nil {
		return nil, false
	}
	out := *own
	out.Instruments = slices.Clone(own.Instruments)
	touched := false
	for _, in := range with.Instruments {
		if len(only) > 0 && !slices.Contains(only, in.ID) {
			continue
		}
		if i := slices.IndexFunc(out.Instruments, func(x cases.Instrument) bool { return x.ID == in.ID }); i >= 0 {
			out.Instruments[i], touched = in, true
		}
	}
	return &out, touched
}

// latestVerdict is the newest grade revision among facts.
func latestVerdict(facts []events.Fact) events.GraderVerdict {
	var v events.GraderVerdict
	for _, f := range facts {
		if g, ok := f.Body.(events.GradeVerdict); ok && g.Verdict.Revision >= v.Revision {
			v = g.Verdict
		}
	}
	return v
}
