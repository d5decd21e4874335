package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
)

// Phases of a runner's live status in which its run waits for a person
// (services/runner: awaitApproval, awaitResolution).
const (
	phaseAwaitingApproval   = "awaiting_approval"
	phaseAwaitingResolution = "awaiting_resolution"
)

// liveStatus is the part of a runner's live status (status.<suite>.<run>
// on CONTROL) that says its run waits for a person, and for what.
type liveStatus struct {
	Phase      string        `json:"phase"`
	Operation  string        `json:"operation"`
	ArgsDigest events.Digest `json:"args_digest"`
	At         time.Time     `json:"at"`
}

// waiting is the runs of a suite that wait for a person now: an operation
// awaiting approval, or one of unknown outcome awaiting factline resolve.
// A runner says so only in its live status; a later fact of the run (the
// decision accepted, the call settled, the run ended) or a later status
// says it no longer waits. It holds only the runs waiting, and is used
// under its progress's lock.
type waiting struct {
	// conn is how a person's command reaches the log, e.g. "--store DIR".
	conn string
	runs map[string]waitingRun
}

// waitingRun is what one run waits for, since when.
type waitingRun struct {
	phase, op string
	args      events.Digest
	at        time.Time
}

func newWaiting(conn string) *waiting {
	return &waiting{conn: conn, runs: map[string]waitingRun{}}
}

// status takes a run's live status in. When the run starts to wait for a
// person it returns the line that says so and how to answer.
func (w *waiting) status(run string, st liveStatus) string {
	switch st.Phase {
	case phaseAwaitingApproval, phaseAwaitingResolution:
	default:
		delete(w.runs, run) // the run moved on
		return ""
	}
	if st.Operation == "" {
		return ""
	}
	next := waitingRun{phase: st.Phase, op: st.Operation, args: st.ArgsDigest, at: st.At}
	if old, ok := w.runs[run]; ok && old.phase == next.phase && old.op == next.op && old.args == next.args {
		return "" // said already
	}
	w.runs[run] = next
	return w.say(run, next)
}

// fact takes a fact of a run in: committed after the run began to wait,
// it ends the wait (the runner commits nothing while it waits).
func (w *waiting) fact(run string, at time.Time) {
	if r, ok := w.runs[run]; ok && at.After(r.at) {
		delete(w.runs, run)
	}
}

// count is how many runs wait for a person.
func (w *waiting) count() int { return len(w.runs) }

// summary is the progress line's part about waiting runs ("" when none):
// with full, the command that answers the one run waiting; without (a
// terminal's line, redrawn in place, must not wrap), only that it waits.
func (w *waiting) summary(full bool) string {
	switch n := len(w.runs); {
	case n == 0:
		return ""
	case n == 1 && !full:
		return " — 1 run waits for you (the command is above)"
	case n == 1:
		for run, r := range w.runs {
			return " — 1 run waits for you: " + w.command(run, r)
		}
	}
	runs := make([]string, 0, len(w.runs))
	for run := range w.runs {
		runs = append(runs, run)
	}
	sort.Strings(runs)
	return fmt.Sprintf(" — %d runs wait for you (%s; the commands are above)", len(runs), strings.Join(runs, ", "))
}

// command is the exact command that answers what a run waits for.
func (w *waiting) command(run string, r waitingRun) string {
	if r.phase == phaseAwaitingApproval {
		return fmt.Sprintf("factline approve %s %s --args-digest %s %s", shellWord(run), shellWord(r.op), r.args, w.conn)
	}
	return fmt.Sprintf("factline resolve %s %s --applied %s (or --not-applied)", shellWord(run), shellWord(r.op), w.conn)
}

// say is the line that tells a person a run waits for them, what for and
// every way to answer.
func (w *waiting) say(run string, r waitingRun) string {
	if r.phase == phaseAwaitingApproval {
		return fmt.Sprintf("run %s waits for you: operation %s needs a person's approval of its exact arguments (%s). "+
			"Approve: %s   Reject: factline reject %s %s %s   (no decision within the runner's approval timeout is a rejection; docs/controls.md)",
			run, r.op, r.args, w.command(run, r), shellWord(run), shellWord(r.op), w.conn)
	}
	return fmt.Sprintf("run %s waits for you: the outcome of operation %s is unknown (its answer was lost after the request may have reached the sink). "+
		"Check the sink for Idempotency-Key %s, then say what you found: factline resolve %s %s --applied %s   or, if it did not take effect: "+
		"factline resolve %s %s --not-applied %s   (docs/controls.md#unknown-outcomes)",
		run, r.op, r.op, shellWord(run), shellWord(r.op), w.conn, shellWord(run), shellWord(r.op), w.conn)
}

// watchStatus follows the runners' live status of the suite from the
// progress's start until ctx ends, and says when a run begins to wait for
// a person. Status is for watching: a read that fails is read again, and
// nothing depends on what it misses.
func (p *progress) watchStatus(ctx context.Context, b *bus.Bus, suite string) {
	prefix := events.StatusPrefix + "." + suite + "."
	var from uint64
	for try := 0; ctx.Err() == nil; try++ {
		opts := bus.ReadOptions{Stream: bus.ControlStream, Filter: prefix + "*", Follow: true, FromSeq: from}
		if from == 0 {
			// A runner's status from before this command is an earlier
			// process's: whatever it waited for, this one has not.
			opts.FromTime = p.start
		}
		_, err := b.Read(ctx, opts, func(r bus.Raw) error {
			from = r.Seq + 1
			var st liveStatus
			if json.Unmarshal(r.Data, &st) != nil {
				return nil
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if note := p.wait.status(strings.TrimPrefix(r.Subject, prefix), st); note != "" {
				p.endLine()
				fmt.Fprintln(p.out, note)
				if !p.tty {
					fmt.Fprintln(p.out, p.line(time.Since(p.start).Round(100*time.Millisecond)))
				}
			}
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		slog.Debug("following the runners' status was interrupted; reading on", "after", from, "err", err)
		if sleep.For(ctx, min(time.Duration(try+1)*200*time.Millisecond, 2*time.Second)) != nil {
			return
		}
	}
}
