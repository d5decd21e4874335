package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/projections/replay"
)

// newExportCmd writes the log, undecoded, to an export file.
func newExportCmd() *cobra.Command {
	var t target
	var path, filter string
	var from uint64
	var noBlobs bool
	c := newCommand("export", maxArgs(1, "export takes at most one FILTER subject (or --filter)"))
	fs := onTarget(c, &t, func(ctx context.Context, args []string, out, errOut io.Writer) error {
		if len(args) == 1 {
			if c.Flags().Changed("filter") && filter != args[0] {
				// Taking one would drop the other without a word, and
				// export another suite than the one asked for.
				return usageError{fmt.Sprintf("FILTER %q and --filter %q: give the filter once", args[0], filter)}
			}
			filter = args[0]
			if err := checkFactFilter("FILTER", filter); err != nil {
				return err
			}
		} else if err := checkFactFilter("--filter", filter); err != nil {
			return err
		}
		return runExport(ctx, &t, path, bus.ReadOptions{Filter: filter, FromSeq: from}, !noBlobs, out, errOut)
	})
	fs.StringVar(&path, "out", "", "file to write (default, or -: standard output)")
	fs.StringVar(&filter, "filter", "fact.>", "subjects to export, e.g. fact.mysuite.>")
	fs.Uint64Var(&from, "from-seq", 0, "first stream sequence to export")
	fs.BoolVar(&noBlobs, "no-blobs", false, "write the facts only (a version 2 file), not the blobs they name (requests, large replies, containment records)")
	return c
}

func runExport(ctx context.Context, t *target, path string, opts bus.ReadOptions, withBlobs bool, out, errOut io.Writer) error {
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	export := b.Export
	if withBlobs {
		export = b.ExportWithBlobs
	}
	if path == "" || path == "-" {
		// "-" is standard output, as import's "-" is standard input.
		res, err := export(ctx, out, opts)
		if err == nil {
			fmt.Fprintf(errOut, "exported %d messages%s\n", res.Messages, blobsCarried(res))
			printMissing(errOut, res)
			printFlagged(errOut, res.Flagged)
		}
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	res, err := export(ctx, f, opts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "exported %d messages%s to %s\n", res.Messages, blobsCarried(res), path)
	printMissing(out, res)
	printFlagged(out, res.Flagged)
	return nil
}

// blobsCarried says what blobs a version 3 export carried, for the line
// that reports an export.
func blobsCarried(res bus.PortResult) string {
	if res.Version < 3 {
		return " (facts only, no blobs)"
	}
	if res.MissingBlobs == 0 {
		return fmt.Sprintf(" and %d blobs (%d bytes)", res.Blobs, res.BlobBytes)
	}
	if res.MissingBlobs == 1 {
		return fmt.Sprintf(" and %d blobs (%d bytes; 1 reference of the facts names a blob the store does not hold: what reads it fails on the file as on the store)",
			res.Blobs, res.BlobBytes)
	}
	return fmt.Sprintf(" and %d blobs (%d bytes; %d references of the facts name blobs the store does not hold: what reads them fails on the file as on the store)",
		res.Blobs, res.BlobBytes, res.MissingBlobs)
}

// printMissing names the first blob references a version 3 export found
// no blob of, with what needs each.
func printMissing(w io.Writer, res bus.PortResult) {
	for _, m := range res.Missing {
		fmt.Fprintf(w, "missing blob: %s\n", m)
	}
	if more := res.MissingBlobs - len(res.Missing); more > 0 {
		fmt.Fprintf(w, "missing blob: ... and %d more ('factline audit' names every one)\n", more)
	}
}

// printFlagged names the messages an export or import carried that hold no
// fact of their subject. They are carried unchanged (an export is a copy
// of the log, and a forgery is evidence); every reader of the copy refuses
// them again.
func printFlagged(w io.Writer, flagged []bus.BadRecord) {
	for _, bad := range flagged {
		fmt.Fprintf(w, "flagged message %d on %s (carried unchanged, read by no projection): %v\n", bad.Seq, bad.Subject, bad.Err)
	}
}

// newImportCmd loads an export file into an empty store or server.
func newImportCmd() *cobra.Command {
	var t target
	c := newCommand("import", exactArgs(1, "give exactly one export FILE to import (- for standard input)"))
	c.RunE = func(c *cobra.Command, args []string) error {
		return runImport(c.Context(), &t, args[0], c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr())
	}
	t.flags(c.Flags())
	fsyncFlag(c, &t.fsync)
	return c
}

func runImport(ctx context.Context, t *target, name string, stdin io.Reader, out, errOut io.Writer) error {
	// Standard input is passed as it is: when it is a file, not a pipe,
	// the import reads it whole before storing any of it.
	var f io.Reader = stdin
	if name != "-" {
		file, err := os.Open(name)
		if err != nil {
			return fileError{err}
		}
		defer file.Close()
		// Checked before a store is opened for it: a broken file is the
		// file's mistake, and leaves no new store directory behind.
		if err := bus.CheckExport(file); err != nil {
			// The error names the file (bus.ExportError).
			return fileError{fmt.Errorf("nothing was imported: %w", err)}
		}
		f = file
	}
	b, closeBus, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	res, err := b.Import(ctx, f)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "imported %d messages from %s\n", res.Messages, name)
	if res.Version >= 3 {
		fmt.Fprintf(out, "restored %d blobs (%d bytes; %d of them the store held already)\n", res.Blobs, res.BlobBytes, res.BlobsPresent)
	}
	if res.Version < 2 {
		fmt.Fprintf(errOut, "warning: %s is a version %d export, which has no end marker: a copy of it cut between two entries cannot be told from its end; check the count against the 'exported N messages' of its export\n", name, res.Version)
	}
	printFlagged(out, res.Flagged)
	return nil
}

// newReplayCmd rebuilds a projection from a store, a server or an export
// file.
func newReplayCmd() *cobra.Command {
	var o replayFlags
	c := newCommand("replay", exactArgs(1, "name the projection to replay (see 'factline projections')"))
	c.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, p := range projections.All() {
			names = append(names, cobra.CompletionWithDesc(p.Name(), p.Doc()))
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	fs := o.src.flags(c, oneArg(o.run), "export file to replay instead of a live stream")
	fs.StringVar(&o.runID, "run", "", "only the facts of this run")
	fs.StringVar(&o.suite, "suite", "", "only the facts of this suite (with --run: the run of this suite, when suites share its ID)")
	o.src.fromSeqFlag(fs)
	o.src.streams = true // read once, in order: --file - needs no copy
	fs.BoolVar(&o.asJSON, "json", false, "print the projection as JSON")
	return c
}

// replayFlags are replay's flags.
type replayFlags struct {
	src          logSource
	runID, suite string
	asJSON       bool
}

func (o *replayFlags) run(ctx context.Context, name string, out, errOut io.Writer) error {
	p, err := projections.Lookup(name)
	if err != nil {
		return usageError{err.Error()}
	}
	if err := checkSuiteFlag(o.suite); err != nil {
		return err
	}
	if _, err := o.src.fromFile(ctx); err != nil {
		return err
	}
	src, _, closeSource, err := o.src.replay(ctx, false)
	if err != nil {
		return err
	}
	defer closeSource()
	var keep replay.Filter
	// The suites with facts of the run: run IDs are unique within a
	// suite only, and the projections key runs by suite and ID, so a
	// run ID two suites share shows two runs.
	var suites []string
	if o.runID != "" || o.suite != "" {
		keep = func(f events.Fact) bool {
			if f.Run == o.runID && !slices.Contains(suites, f.Suite) {
				suites = append(suites, f.Suite)
			}
			return (o.runID == "" || f.Run == o.runID) && (o.suite == "" || f.Suite == o.suite)
		}
	}
	in := p.Start()
	res, err := replay.Run(ctx, src, in, keep)
	if err != nil {
		return err
	}
	for _, bad := range res.Bad {
		fmt.Fprintf(errOut, "skipped message %d on %s: %v\n", bad.Seq, bad.Subject, bad.Err)
	}
	if (o.runID != "" || o.suite != "") && res.Applied == 0 {
		// An empty projection would read as a run with nothing in it.
		where := "the log"
		if o.src.file != "" {
			where = o.src.name()
		}
		if o.src.from > 0 {
			where += fmt.Sprintf(" from sequence %d", o.src.from)
		}
		switch {
		case o.runID != "" && o.suite != "" && len(suites) > 0:
			return fmt.Errorf("%s holds no fact of run %q of suite %q; the suites that hold it: %s", where, o.runID, o.suite, strings.Join(suites, ", "))
		case o.runID != "" && o.suite != "":
			return fmt.Errorf("%s holds no fact of run %q of suite %q (are the names right? 'factline replay runs' lists the runs)", where, o.runID, o.suite)
		case o.runID != "":
			return fmt.Errorf("%s holds no fact of run %q (is the ID right? 'factline replay runs' lists the runs)", where, o.runID)
		}
		return fmt.Errorf("%s holds no fact of suite %q (is the name right? 'factline replay suites' lists the suites)", where, o.suite)
	}
	if o.runID != "" && o.suite == "" && len(suites) > 1 {
		fmt.Fprintf(errOut, "note: run %q is a run of %d suites (%s): each is shown under its suite; --suite S shows one\n", o.runID, len(suites), strings.Join(suites, ", "))
	}
	if !o.asJSON {
		fmt.Fprintf(out, "%s: %d facts applied, %d bad, last sequence %d\n", name, res.Applied, len(res.Bad), res.LastSeq)
	}
	return printJSON(out, in.View())
}

// newProjectionsCmd lists the projections replay knows.
func newProjectionsCmd() *cobra.Command {
	c := newCommand("projections", noArgs)
	c.RunE = func(c *cobra.Command, _ []string) error { return listProjections(c.OutOrStdout()) }
	return c
}

func listProjections(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, p := range projections.All() {
		fmt.Fprintf(tw, "%s\t%s\n", p.Name(), p.Doc())
	}
	return tw.Flush()
}

// printJSON writes v as one indented JSON document: what replay, audit
// and version print whole for --json.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
