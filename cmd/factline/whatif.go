package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/lab/recorded"
	"github.com/factline/factline/lab/whatif"
)

// newWhatifCmd replays recorded runs through the stall core under
// candidate policies (docs/stopping.md#measuring-a-threshold-factline-whatif).
func newWhatifCmd() *cobra.Command {
	var o whatifFlags
	c := newCommand("whatif", cobra.ArbitraryArgs)
	fs := o.src.flags(c, o.run, "export file to read instead of a store or a server (needs --suite)")
	fs.StringVar(&o.suite, "suite", "", "with --file: the suite file whose cases and treatments the runs ran under (an export with its blobs holds them)")
	fs.StringArrayVar(&o.policies, "policy", nil, "a candidate policy file (a stall block; repeat for several)")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	fs.StringVar(&o.svg, "svg", "", "also write the trade-off curve (false stops against tokens saved) to this SVG file")
	return c
}

// whatifFlags are whatif's flags.
type whatifFlags struct {
	src      logSource
	suite    string
	policies []string
	asJSON   bool
	svg      string
}

func (o *whatifFlags) run(ctx context.Context, suites []string, out, errOut io.Writer) error {
	if len(o.policies) == 0 {
		// The recorded policy alone would replay the recording and compare
		// nothing: say what a candidate is and where one is.
		return usageError{fmt.Sprintf("whatif needs at least one --policy FILE to compare with the recording: %s; for example --policy %s",
			whatif.PolicyFile, whatif.ExamplePolicy)}
	}
	var cands []whatif.Candidate
	names := map[string]string{}
	for _, p := range o.policies {
		data, err := cases.ReadInput(p, cases.MaxFileBytes, "a policy file")
		if err != nil {
			return fileError{fmt.Errorf("--policy: %w", err)}
		}
		c, err := whatif.ParseCandidate(p, data)
		if err != nil {
			return fileError{err}
		}
		if other, dup := names[c.Name]; dup {
			return usageError{fmt.Sprintf("--policy %s and %s are both named %q: give one a name: line", other, p, c.Name)}
		}
		names[c.Name] = p
		cands = append(cands, c)
	}
	file, err := o.src.fromFile(ctx)
	if err != nil {
		return err
	}
	var resolve recorded.Resolver
	switch {
	case file && o.suite == "":
		// A version 3 export holds the case and treatment blobs its
		// run.requested facts name.
		if err := o.src.checkFile(); err != nil {
			return err
		}
		var version int
		if resolve, version, err = recorded.FromExport(o.src.file); err != nil {
			return err
		}
		if version < 3 {
			return usageError{"--file needs --suite: an export written without blobs (--no-blobs, or before version 3) holds facts, not the cases and treatments the runs ran under"}
		}
	case file:
		if resolve, err = recorded.FromSuite(ctx, o.suite); err != nil {
			return err
		}
	case o.suite != "":
		return usageError{"--suite goes with --file; a store or a server holds the cases itself"}
	}
	src, b, closeSource, err := o.src.replay(ctx, false)
	if err != nil {
		return err
	}
	defer closeSource()
	if b != nil {
		resolve = recorded.FromBus(b)
	}
	res, err := recorded.Load(ctx, src, suites, resolve)
	if err != nil {
		return err
	}
	for _, bad := range res.Bad {
		fmt.Fprintf(errOut, "skipped message %d on %s: %v\n", bad.Seq, bad.Subject, bad.Err)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(errOut, "skipped run %s/%s: %s\n", s.Suite, s.Run, s.Reason)
	}
	if len(res.Runs) == 0 {
		return fmt.Errorf("no recorded run to replay (record one with factline run SUITE --store DIR)")
	}
	rep := whatif.Evaluate(res.Runs, cands)
	if o.svg != "" {
		f, err := os.Create(o.svg)
		if err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
		err = rep.WriteSVG(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
	}
	if o.asJSON {
		return printJSON(out, rep)
	}
	return rep.WriteText(out)
}
