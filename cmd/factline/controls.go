package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/factline/factline/events"
)

// runControl sends one control signal to a run. The run's runner accepts it
// (or not) and records that as control.accepted; sending is only a request.
func runControl(sig events.Signal, synopsis string, positional int) func(context.Context, []string, io.Writer) error {
	return func(ctx context.Context, args []string, out io.Writer) error {
		fs := newFlags(string(sig), synopsis, out)
		var t target
		t.flags(fs)
		reason := fs.String("reason", "", "why (shown in the run's handoff)")
		digest := fs.String("args-digest", "", "approve: the digest of the exact arguments approved (from dispatch.intended)")
		from := fs.String("from", "", "who sends the signal")
		applied := fs.Bool("applied", false, "resolve: the operation took effect")
		notApplied := fs.Bool("not-applied", false, "resolve: the operation did not take effect (it may run again)")
		pos, rest := splitPositional(args, positional)
		if err := parse(fs, rest); err != nil {
			return err
		}
		pos = append(pos, fs.Args()...)
		if len(pos) != positional {
			return usageError{fmt.Sprintf("want %d arguments: %s", positional, synopsis)}
		}
		b, closeBus, err := t.open(ctx)
		if err != nil {
			return err
		}
		defer closeBus()
		run := pos[0]
		suite, err := b.FindSuite(ctx, run)
		if err != nil {
			return err
		}
		c := events.Control{ID: events.NewID().String(), Signal: sig, Reason: *reason, From: *from}
		switch sig {
		case events.SignalSteer:
			c.Instruction = pos[1]
		case events.SignalApprove, events.SignalReject:
			c.Operation = pos[1]
			c.ArgsDigest = events.Digest(*digest)
		case events.SignalResolve:
			if *applied == *notApplied {
				return usageError{"say what you found: --applied or --not-applied"}
			}
			c.Operation, c.Outcome = pos[1], events.OutcomeNotApplied
			if *applied {
				c.Outcome = events.OutcomeApplied
			}
		}
		if err := b.SendControl(ctx, suite, run, c); err != nil {
			return err
		}
		fmt.Fprintf(out, "sent %s %s to %s/%s; the runner records its acceptance as control.accepted\n", sig, c.ID, suite, run)
		return nil
	}
}

// splitPositional takes up to n leading arguments that are not flags, so
// that flags may follow them.
func splitPositional(args []string, n int) (pos, rest []string) {
	for len(args) > 0 && len(pos) < n && !strings.HasPrefix(args[0], "-") {
		pos, args = append(pos, args[0]), args[1:]
	}
	return pos, args
}
