package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops"
)

// newTailCmd follows facts, or control signals and live status, as they
// are committed.
func newTailCmd() *cobra.Command {
	var o tailFlags
	c := newCommand("tail", maxArgs(1, "tail takes at most one FILTER subject, e.g. 'fact.demo.>'"))
	fs := onTarget(c, &o.t, o.run)
	fs.StringVar(&o.runID, "run", "", "only this run's facts")
	fs.StringVar(&o.kind, "kind", "", "only facts of this kind, e.g. stop.decided (with --control: a signal or status)")
	fs.StringVar(&o.since, "since", "new", "where to start: a stream sequence, an RFC 3339 time, start, or new")
	fs.BoolVar(&o.asJSON, "json", false, "one JSON object per line (the fact's wire fields)")
	fs.BoolVar(&o.control, "control", false, "follow control signals and live status instead of facts")
	fs.BoolVar(&o.noFollow, "no-follow", false, "stop at the end of the stream instead of waiting for more")
	_ = c.RegisterFlagCompletionFunc("since", fixedCompletions("start", "new"))
	_ = c.RegisterFlagCompletionFunc("kind", kindCompletions)
	return c
}

// tailFlags are tail's flags.
type tailFlags struct {
	t                         target
	runID, kind, since        string
	asJSON, control, noFollow bool
}

// kindCompletions offers the fact kinds (and, with --control, the
// signals and status).
func kindCompletions(c *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if control, _ := c.Flags().GetBool("control"); control {
		for _, s := range events.Signals() {
			out = append(out, string(s))
		}
		return append(out, "status"), cobra.ShellCompDirectiveNoFileComp
	}
	for _, k := range events.Kinds() {
		out = append(out, string(k))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func (o *tailFlags) run(ctx context.Context, pos []string, out, _ io.Writer) error {
	t := &o.t
	filter := "fact.>"
	if len(pos) == 1 {
		filter = pos[0]
		if err := filterAlone(filter, o.runID, o.kind, o.control); err != nil {
			return err
		}
		if err := checkFactFilter("FILTER", filter); err != nil {
			return err
		}
	}
	if o.runID != "" {
		if err := events.ValidateToken("run", o.runID); err != nil {
			return usageError{fmt.Sprintf("--run %q: %v", o.runID, err)}
		}
	}
	if o.kind != "" && !o.control && !events.Kind(o.kind).Known() {
		// A kind no fact has is a filter that never matches: following
		// it would wait forever in silence.
		return usageError{fmt.Sprintf("--kind %q: no fact has that kind (have: %s)", o.kind, joinKinds())}
	}
	switch {
	case o.runID != "" && o.kind != "":
		filter = fmt.Sprintf("fact.*.%s.%s", o.runID, o.kind)
	case o.runID != "":
		filter = fmt.Sprintf("fact.*.%s.>", o.runID)
	case o.kind != "":
		filter = string(events.KindFilter(events.Kind(o.kind)))
	}
	// Flags are checked before anything is opened.
	opts := bus.ReadOptions{Filter: filter, Follow: !o.noFollow}
	switch s := o.since; s {
	case "start", "new":
	default:
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			opts.FromSeq = n
		} else if at, err := time.Parse(time.RFC3339, s); err == nil {
			opts.FromTime = at
		} else {
			return usageError{fmt.Sprintf("--since %q: want a sequence, an RFC 3339 time, start or new", s)}
		}
	}
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	stream := bus.FactsStream
	if o.control {
		stream = bus.ControlStream
	}
	if o.since == "new" {
		info, err := b.JetStream().Stream(ctx, stream)
		if err != nil {
			return err
		}
		opts.FromSeq = info.CachedInfo().State.LastSeq + 1
	}
	if o.control {
		return tailControl(ctx, b, out, o.runID, o.kind, opts, o.asJSON)
	}
	var tree ops.Tree
	_, err = b.Read(ctx, opts, func(r bus.Raw) error {
		if o.asJSON {
			return printFactJSON(out, r)
		}
		f, err := r.Fact()
		if errors.Is(err, events.ErrSubjectMismatch) {
			_, werr := fmt.Fprintf(out, "%6d %s !! NOT A FACT OF ITS SUBJECT, refused by every reader: %v\n", r.Seq, r.Subject, err)
			return werr
		}
		if err != nil {
			_, werr := fmt.Fprintf(out, "%6d %s undecodable: %v\n", r.Seq, r.Subject, err)
			return werr
		}
		// A child run's lines are indented under its parent's.
		_, err = fmt.Fprintln(out, ops.TreeLine(r.Seq, f, tree.Depth(f)))
		return err
	})
	if ctx.Err() != nil {
		return nil // interrupted: a tail ends when it is told to
	}
	return err
}

// printFactJSON writes a stored fact as one JSON line with its wire keys,
// without interpreting it, so facts this version cannot decode still show.
// A fact that is not the one its subject names is shown too, with
// "refused" saying why every reader leaves it out.
func printFactJSON(out io.Writer, r bus.Raw) error {
	line := map[string]any{"seq": r.Seq, "subject": r.Subject, "msg_id": r.MsgID}
	// Any envelope version, shown with version 1's keys; version 4's suite
	// and run are the subject's.
	if wire, err := events.WireMapStored(r.Subject, r.Data); err != nil {
		line["error"] = err.Error()
	} else {
		line["fact"] = wire
	}
	if _, err := r.Fact(); errors.Is(err, events.ErrSubjectMismatch) {
		line["refused"] = err.Error()
	}
	return printJSONLine(out, line)
}

// printJSONLine writes v as JSON on one line: tail --json's output is read
// a line at a time while it is still being written.
func printJSONLine(out io.Writer, v any) error {
	return json.NewEncoder(out).Encode(v)
}

// filterAlone refuses a FILTER given with what would replace it: --run
// and --kind make the filter themselves, and --control reads another
// stream, so the FILTER would be dropped without a word and the tail show
// other suites' facts than the ones asked for.
func filterAlone(filter, run, kind string, control bool) error {
	if control {
		return usageError{fmt.Sprintf("FILTER %q selects facts; --control shows signals and status: choose them with --run and --kind", filter)}
	}
	if run == "" && kind == "" {
		return nil
	}
	flags := "--run"
	switch {
	case run != "" && kind != "":
		flags = "--run and --kind"
	case kind != "":
		flags = "--kind"
	}
	hint := "write them into the FILTER (fact.SUITE.RUN.KIND, * for any one token)"
	if parts := strings.Split(filter, "."); len(parts) == 3 && parts[0] == "fact" && parts[2] == ">" {
		r, k := run, kind
		if r == "" {
			r = "*"
		}
		if k == "" {
			k = ">"
		}
		hint = fmt.Sprintf("for both, FILTER fact.%s.%s.%s", parts[1], r, k)
	}
	return usageError{fmt.Sprintf("FILTER %q and %s: %s would replace the FILTER; give one, or %s", filter, flags, flags, hint)}
}

// joinKinds lists the fact kinds this version knows.
func joinKinds() string {
	var names []string
	for _, k := range events.Kinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// tailControl shows control signals and live status from the CONTROL
// stream (which keeps them for its short max age), honouring the same
// options as facts: --run, --kind (a signal, or "status"), --since,
// --no-follow and --json.
func tailControl(ctx context.Context, b *bus.Bus, out io.Writer, run, kind string, opts bus.ReadOptions, asJSON bool) error {
	tok := func(s string) string {
		if s == "" {
			return "*"
		}
		return s
	}
	switch kind {
	case "":
		opts.Filters = []string{fmt.Sprintf("%s.*.%s.*", events.ControlPrefix, tok(run)), fmt.Sprintf("%s.*.%s", events.StatusPrefix, tok(run))}
	case "status":
		opts.Filters = []string{fmt.Sprintf("%s.*.%s", events.StatusPrefix, tok(run))}
	default:
		if !slices.Contains(events.Signals(), events.Signal(kind)) {
			return usageError{fmt.Sprintf("--kind %q with --control: want a signal (%v) or status", kind, events.Signals())}
		}
		opts.Filters = []string{fmt.Sprintf("%s.*.%s.%s", events.ControlPrefix, tok(run), kind)}
	}
	opts.Stream, opts.Filter = bus.ControlStream, ""
	_, err := b.Read(ctx, opts, func(r bus.Raw) error {
		if asJSON {
			line := map[string]any{"seq": r.Seq, "subject": r.Subject, "time": r.Time.UTC()}
			var body any
			if json.Unmarshal(r.Data, &body) == nil {
				line["data"] = body
			} else {
				line["raw"] = string(r.Data)
			}
			return printJSONLine(out, line)
		}
		_, err := fmt.Fprintf(out, "%6d %s %s %s\n", r.Seq, r.Time.UTC().Format(time.TimeOnly), r.Subject, r.Data)
		return err
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
