package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/factline/factline/bus"
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
		wait := fs.Duration("wait", 30*time.Second, "how long to wait for the runner to accept the signal (0: send and return, unconfirmed)")
		pos, rest := splitPositional(args, positional)
		if err := parse(fs, rest); err != nil {
			return err
		}
		pos = append(pos, fs.Args()...)
		if len(pos) != positional {
			return usageError{fmt.Sprintf("want %d arguments: %s", positional, synopsis)}
		}
		b, closeBus, err := t.readsExisting().open(ctx)
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
		if *wait < 0 {
			return usageError{"--wait must not be negative"}
		}
		if err := b.SendControl(ctx, suite, run, c); err != nil {
			return err
		}
		if *wait == 0 {
			fmt.Fprintf(out, "sent %s %s to %s/%s; not waiting for its acceptance (control.accepted)\n", sig, c.ID, suite, run)
			return nil
		}
		return awaitAcceptance(ctx, b, suite, run, c, *wait, out)
	}
}

// awaitAcceptance waits until the run's log says what became of a signal:
// accepted (control.accepted cites it), or never to be (the run ended
// first). A signal is a request; only its acceptance is a fact, so the
// command never reports success for one the runner did not take in.
func awaitAcceptance(ctx context.Context, b *bus.Bus, suite, run string, c events.Control, wait time.Duration, out io.Writer) error {
	deadline := time.Now().Add(wait)
	for {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return err
		}
		for _, f := range log.Facts() {
			switch body := f.Body.(type) {
			case events.ControlAccepted:
				if body.Control.ID != c.ID {
					continue
				}
				what := ""
				if c.Signal == events.SignalSteer {
					gen := acceptedGeneration(log.Facts(), f.Position)
					if gen == 0 && time.Now().Before(deadline) {
						break // its task.generation follows at once: look again
					}
					what = fmt.Sprintf(": the task is now generation %d", gen)
				}
				fmt.Fprintf(out, "%s %s accepted by %s/%s%s\n", c.Signal, c.ID, suite, run, what)
				return nil
			case events.RunEnded:
				return fmt.Errorf("%s %s was not accepted: the run ended %s (%s) before its runner took it in", c.Signal, c.ID, body.Status, body.Reason)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s was sent to %s/%s but not accepted within %v (is a runner on the run? it takes signals at safe points; follow it with: factline tail --run %s --kind control.accepted)", c.Signal, c.ID, suite, run, wait, run)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// acceptedGeneration is the task generation a steer accepted at position
// pos started: the task.generation that follows it.
func acceptedGeneration(facts []events.Fact, pos uint64) uint32 {
	for _, f := range facts {
		if g, ok := f.Body.(events.TaskGenerationStarted); ok && f.Position > pos {
			return g.Generation
		}
	}
	return 0
}

// splitPositional takes up to n leading arguments that are not flags, so
// that flags may follow them.
func splitPositional(args []string, n int) (pos, rest []string) {
	for len(args) > 0 && len(pos) < n && !strings.HasPrefix(args[0], "-") {
		pos, args = append(pos, args[0]), args[1:]
	}
	return pos, args
}
