package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/fleet"
	"github.com/factline/factline/services/grader"
	"github.com/factline/factline/services/kit"
)

// newRegradeCmd grades a suite's runs again under changed instruments,
// appending new grade revisions (docs/grading.md#regrading).
func newRegradeCmd() *cobra.Command {
	var o regradeFlags
	c := newCommand("regrade", nameArgs(1, "name one suite: factline regrade SUITE --grading FILE", "suite"))
	fs := onTarget(c, &o.t, oneArg(o.run))
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
		return fileError{fmt.Errorf("--grading: %w", err)}
	}
	// Checked here, before any store is opened, so that a mistake is named
	// by this file's line and field, not found by the grader at the first
	// run as an index into a merged case.
	parsed, err := cases.ParseGrading(o.grading, data)
	if err != nil {
		return fileError{err}
	}
	with := *parsed
	if len(with.Instruments) == 0 && len(with.Scorers) == 0 {
		return fileError{fmt.Errorf("%s: instruments: none given: regrade replaces the case's instruments of the same id", o.grading)}
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
			sayDisputed(out, suite, r.Run, r.After, r.Facts)
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
	if regraded == 0 && chosen > 0 {
		// Regrade adds no instrument a case lacks, so a misspelt id regrades
		// nothing: that must not read as a regrade that found all well.
		return fmt.Errorf("--grading %s: no case of the %d runs regraded has an instrument %s (nor a scorer of the file's): regrade replaces a case's instruments and scorers by id and adds none",
			o.grading, chosen, strings.Join(gradingIDs(with, o.instruments), ", "))
	}
	fmt.Fprintf(out, "regraded %d of %d runs of %s, %d with a new revision; 'factline report %s' reads them\n", regraded, chosen, suite, changed, suite)
	return nil
}

// sayDisputed tells, for each grade.conflict the new revision v appended,
// what it does to the report and how the dispute is settled: a later
// revision that appends no conflict of its own (one that agrees with the
// revision before it). Grading again under the same plan appends nothing,
// so it takes a new version of the instrument.
func sayDisputed(out io.Writer, suite, run string, v events.GraderVerdict, facts []events.Fact) {
	for _, f := range facts {
		c, ok := f.Body.(events.GradeConflict)
		if !ok || c.Revision != v.Revision || c.SnapshotDigest != v.SnapshotID {
			continue
		}
		fmt.Fprintf(out, "%s: revision %d conflicts with revision %d on %s (%s): the attempt is now disputed — the report counts it "+
			"neither passed nor failed, and the suite is not complete — until a later revision that agrees with the one before it settles it: "+
			"check %s, then grade the run again under a new version of it: factline regrade %s --run %s --grading FILE "+
			"(docs/grading.md#re-grades-revisions-and-conflicts)\n",
			run, c.Revision, c.ConflictsWith, c.Instrument, c.Reason, c.Instrument, suite, run)
	}
}

// gradingIDs are the ids of the instruments a regrade applies: those of
// only, when given, else every one of g.
func gradingIDs(g cases.Grading, only []string) []string {
	if len(only) > 0 {
		return only
	}
	ids := make([]string, 0, len(g.Instruments))
	for _, in := range g.Instruments {
		ids = append(ids, in.ID)
	}
	return ids
}
