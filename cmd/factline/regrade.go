package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
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
	opts := fleet.RegradeOptions{With: with, Runs: o.runs, Instruments: o.instruments,
		Grader: []kit.Option{kit.WithInstance(kit.LocalInstance("regrade"))}}
	if o.workDir != "" {
		opts.Grader = append(opts.Grader, grader.WithWorkDir(o.workDir))
	}
	changed, regraded := 0, 0
	chosen, err := fleet.Regrade(ctx, b, suite, opts, func(r fleet.Regraded) {
		switch {
		case r.Skipped:
			fmt.Fprintf(out, "%s: skipped, its case %s has none of the instruments regraded\n", r.Run, r.Case)
			return
		case r.Changed():
			changed++
			fmt.Fprintf(out, "%s: revision %d, %s (was revision %d, %s)\n", r.Run, r.After.Revision, r.After.Result.Type(), r.Before.Revision, r.Before.Result.Type())
		default:
			fmt.Fprintf(out, "%s: unchanged at revision %d, %s\n", r.Run, r.After.Revision, r.After.Result.Type())
		}
		regraded++
	})
	if unknown := (*fleet.UnknownRunError)(nil); errors.As(err, &unknown) {
		return fmt.Errorf("--run %s: no ended run of suite %s has that id", unknown.Run, unknown.Suite)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "regraded %d of %d runs of %s, %d with a new revision; 'factline report %s' reads them\n", regraded, chosen, suite, changed, suite)
	return nil
}
