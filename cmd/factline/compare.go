package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/factline/factline/services/meter/measure"
)

// newCompareCmd compares two suites attempt by attempt, each from a store,
// a server or an export file (docs/report.md#comparing-two-suites).
func newCompareCmd() *cobra.Command {
	var o compareOptions
	c := newCommand("compare", exactArgs(2, "name two suites: factline compare A B (each SUITE or SUITE@WHERE)"))
	fs := onTarget(c, &o.t, o.run)
	fs.BoolVar(&o.asJSON, "json", false, "the comparison as JSON")
	fs.BoolVar(&o.asCSV, "csv", false, "one CSV row per case and treatment pair")
	fs.BoolVar(&o.asMarkdown, "markdown", false, "the comparison as Markdown, for a pull request's comment")
	fs.BoolVar(&o.allowChanged, "allow-changed-cases", false, "pair the attempts of cases whose content differs between A and B (they are listed either way)")
	fs.StringArrayVar(&o.treatments, "treatment", nil, "pair treatment NAME of A with NAME of B, or A_NAME=B_NAME; repeatable (default: the treatments both name, or the only one each has)")
	o.gates.flags(fs, "exit 3 when B's pass rate is more than POINTS under A's (5: five points), or with scorer=NAME:VALUE a scorer's mean worse by more than VALUE; repeatable")
	return c
}

// compareOptions are compare's flags.
type compareOptions struct {
	t                         target
	asJSON, asCSV, asMarkdown bool
	allowChanged              bool
	treatments                []string
	gates                     gateFlags
}

func (o *compareOptions) run(ctx context.Context, args []string, out, errOut io.Writer) error {
	argA, argB := args[0], args[1]
	if countTrue(o.asJSON, o.asCSV, o.asMarkdown) > 1 {
		return usageError{"give one of --json, --csv and --markdown: the comparison is written in one format"}
	}
	if o.gates.junit != "" {
		return usageError{"--junit is run's: it writes one test case per attempt of the suite it runs"}
	}
	gates, err := o.gates.parse()
	if err != nil {
		return err
	}
	opts := measure.CrossOptions{AllowChangedCases: o.allowChanged}
	if opts.Treatments, err = parseTreatmentPairs(o.treatments); err != nil {
		return err
	}
	var sides [2]measure.Side
	for i, arg := range []string{argA, argB} {
		src, err := parseSuiteSource(arg)
		if err != nil {
			return err
		}
		l, bad, err := src.load(ctx, &o.t)
		if err != nil {
			return err
		}
		for _, r := range bad {
			fmt.Fprintf(errOut, "warning: %s: message %d on %s is left out of the comparison: %v\n", arg, r.Seq, r.Subject, r.Err)
		}
		sides[i] = measure.Side{Source: arg, Log: l}
	}
	c, err := measure.CompareSuites(sides[0], sides[1], opts)
	if errors.Is(err, measure.ErrNoPairing) || errors.Is(err, measure.ErrUnknownTreatment) {
		return usageError{err.Error()}
	} else if err != nil {
		return err
	}
	switch {
	case o.asJSON:
		err = measure.WriteCompareJSON(out, c)
	case o.asCSV:
		err = measure.WriteCompareCSV(out, c)
	case o.asMarkdown:
		err = measure.WriteCompareMarkdown(out, c)
	default:
		err = measure.WriteCompareText(out, c)
	}
	if err != nil || len(gates) == 0 {
		return err
	}
	return verdict("B ("+argB+")", measure.Build(sides[1].Log), measure.CheckComparison(c, gates))
}

// parseTreatmentPairs reads --treatment's values, NAME or A_NAME=B_NAME.
func parseTreatmentPairs(values []string) ([]measure.TreatmentPair, error) {
	var out []measure.TreatmentPair
	for _, t := range values {
		a, b, ok := strings.Cut(t, "=")
		if !ok {
			b = a
		}
		if a == "" || b == "" {
			return nil, usageError{fmt.Sprintf("--treatment %q: want NAME or A_NAME=B_NAME", t)}
		}
		out = append(out, measure.TreatmentPair{A: a, B: b})
	}
	return out, nil
}
