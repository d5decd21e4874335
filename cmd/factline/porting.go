package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/projections/replay"
)

func runExport(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("export", "export [FILTER] (--store DIR | --nats URL) [--out FILE] [--from-seq N]", out)
	var t target
	t.flags(fs)
	path := fs.String("out", "", "file to write (default: standard output)")
	filter := fs.String("filter", "fact.>", "subjects to export, e.g. fact.mysuite.>")
	from := fs.Uint64("from-seq", 0, "first stream sequence to export")
	pos, rest := splitPositional(args, 1)
	if err := parse(fs, rest); err != nil {
		return err
	}
	if len(pos) == 1 {
		*filter = pos[0]
	}
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	if *path == "" {
		res, err := b.Export(ctx, out, bus.ReadOptions{Filter: *filter, FromSeq: *from})
		if err == nil {
			fmt.Fprintf(os.Stderr, "exported %d messages\n", res.Messages)
			printFlagged(os.Stderr, res.Flagged)
		}
		return err
	}
	f, err := os.Create(*path)
	if err != nil {
		return err
	}
	res, err := b.Export(ctx, f, bus.ReadOptions{Filter: *filter, FromSeq: *from})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "exported %d messages to %s\n", res.Messages, *path)
	printFlagged(out, res.Flagged)
	return nil
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

func runImport(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("import", "import (--store DIR | --nats URL) FILE (- for standard input)", out)
	var t target
	t.flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"give exactly one export FILE to import"}
	}
	var f io.ReadCloser = os.Stdin
	if fs.Arg(0) != "-" {
		file, err := os.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		f = file
	}
	defer f.Close()
	b, closeBus, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	res, err := b.Import(ctx, f)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "imported %d messages from %s\n", res.Messages, fs.Arg(0))
	printFlagged(out, res.Flagged)
	return nil
}

func runReplay(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("replay", "replay PROJECTION (--file EXPORT | --store DIR | --nats URL) [--run ID] [--from-seq N] [--json]", out)
	var t target
	t.flags(fs)
	file := fs.String("file", "", "export file to replay instead of a live stream")
	runID := fs.String("run", "", "only the facts of this run")
	from := fs.Uint64("from-seq", 0, "first stream sequence to replay")
	asJSON := fs.Bool("json", false, "print the projection as JSON")
	// Flags may follow the projection name.
	name := ""
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	}
	if name == "" {
		return usageError{"name the projection to replay (see 'factline projections')"}
	}
	p, err := projections.Lookup(name)
	if err != nil {
		return usageError{err.Error()}
	}
	var src replay.Source
	if *file != "" {
		if t.store != "" || t.url != "" {
			return usageError{"give --file, --store or --nats, only one"}
		}
		src = replay.File(*file)
	} else {
		b, closeBus, err := t.readsExisting().open(ctx)
		if err != nil {
			return err
		}
		defer closeBus()
		src = replay.Stream(b, bus.ReadOptions{FromSeq: *from})
	}
	var keep replay.Filter
	if *runID != "" {
		keep = func(f events.Fact) bool { return f.Run == *runID }
	}
	in := p.Start()
	res, err := replay.Run(ctx, src, in, keep)
	if err != nil {
		return err
	}
	for _, bad := range res.Bad {
		fmt.Fprintf(os.Stderr, "skipped message %d on %s: %v\n", bad.Seq, bad.Subject, bad.Err)
	}
	if !*asJSON {
		fmt.Fprintf(out, "%s: %d facts applied, %d bad, last sequence %d\n", name, res.Applied, len(res.Bad), res.LastSeq)
	}
	return printJSON(out, in.View())
}

func runProjections(_ context.Context, args []string, out io.Writer) error {
	fs := newFlags("projections", "projections", out)
	if err := parse(fs, args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, p := range projections.All() {
		fmt.Fprintf(tw, "%s\t%s\n", p.Name(), p.Doc())
	}
	return tw.Flush()
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
