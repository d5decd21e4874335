package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/ops"
)

func runTail(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("tail", "tail [FILTER] [--run ID] [--kind KIND] [--since SEQ|TIME|start|new] [--json] [--control] (--store DIR | --nats URL)", out)
	var t target
	t.flags(fs)
	runID := fs.String("run", "", "only this run's facts")
	kind := fs.String("kind", "", "only facts of this kind, e.g. stop.decided")
	since := fs.String("since", "new", "where to start: a stream sequence, an RFC 3339 time, start, or new")
	asJSON := fs.Bool("json", false, "one JSON object per line (the fact's wire fields)")
	control := fs.Bool("control", false, "follow control signals and live status instead of facts")
	noFollow := fs.Bool("no-follow", false, "stop at the end of the stream instead of waiting for more")
	pos, rest := splitPositional(args, 1)
	if err := parse(fs, rest); err != nil {
		return err
	}
	filter := "fact.>"
	if len(pos) == 1 {
		filter = pos[0]
	}
	switch {
	case *runID != "" && *kind != "":
		filter = fmt.Sprintf("fact.*.%s.%s", *runID, *kind)
	case *runID != "":
		filter = fmt.Sprintf("fact.*.%s.>", *runID)
	case *kind != "":
		filter = string(events.KindFilter(events.Kind(*kind)))
	}
	// Flags are checked before anything is opened.
	opts := bus.ReadOptions{Filter: filter, Follow: !*noFollow}
	switch s := *since; s {
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
	if *control {
		stream = bus.ControlStream
	}
	if *since == "new" {
		info, err := b.JetStream().Stream(ctx, stream)
		if err != nil {
			return err
		}
		opts.FromSeq = info.CachedInfo().State.LastSeq + 1
	}
	if *control {
		return tailControl(ctx, b, out, *runID, *kind, opts, *asJSON)
	}
	_, err = b.Read(ctx, opts, func(r bus.Raw) error {
		if *asJSON {
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
		_, err = fmt.Fprintln(out, ops.Line(r.Seq, f))
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
	var wire map[string]any
	line := map[string]any{"seq": r.Seq, "subject": r.Subject, "msg_id": r.MsgID}
	if err := msgpack.Unmarshal(r.Data, &wire); err != nil {
		line["error"] = err.Error()
	} else {
		line["fact"] = wire
	}
	if _, err := r.Fact(); errors.Is(err, events.ErrSubjectMismatch) {
		line["refused"] = err.Error()
	}
	data, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(data))
	return err
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
			data, err := json.Marshal(line)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(out, string(data))
			return err
		}
		_, err := fmt.Fprintf(out, "%6d %s %s %s\n", r.Seq, r.Time.UTC().Format(time.TimeOnly), r.Subject, r.Data)
		return err
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
