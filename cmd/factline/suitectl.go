package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/projections"
	"github.com/factline/factline/services/meter"
)

// newSuiteCmd is "factline suite pause|resume|drain|cancel SUITE": an
// operator's control of a whole suite (docs/controls.md#suites).
func newSuiteCmd() *cobra.Command {
	c := newCommand("suite", func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usageError{"want an action: factline suite pause|resume|drain|cancel SUITE"}
		}
		return usageError{fmt.Sprintf("unknown action %q: want pause, resume, drain or cancel", args[0])}
	})
	c.RunE = func(*cobra.Command, []string) error { return nil }
	// This command runs only when no action matched, and then the action
	// is what is wrong: the flags given with it are the actions' (--store,
	// --reason …), and refusing them first would blame a flag that is
	// right instead of naming the mistyped action.
	c.FParseErrWhitelist.UnknownFlags = true
	for _, a := range events.SuiteActions() {
		c.AddCommand(newSuiteActionCmd(a))
	}
	return c
}

func newSuiteActionCmd(action events.SuiteAction) *cobra.Command {
	var t target
	var reason, from string
	c := newCommand("suite "+string(action), exactArgs(1, fmt.Sprintf("want 1 argument: factline suite %s SUITE", action)))
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := events.ValidateToken("suite", args[0]); err != nil {
			return usageError{fmt.Sprintf("suite %q: %v", args[0], err)}
		}
		if from == "" {
			from = whoami()
		}
		b, closeBus, err := t.readsExisting().open(c.Context())
		if err != nil {
			return err
		}
		defer closeBus()
		return controlSuite(c.Context(), b, args[0], events.SuiteControlled{
			ID: events.NewID().String(), Action: action, From: from, Reason: reason}, c.OutOrStdout())
	}
	fs := c.Flags()
	t.flags(fs)
	fs.StringVar(&reason, "reason", "", "why (in the fact, the report's heading and, for cancel, the runs' endings)")
	fs.StringVar(&from, "from", "", "who controls the suite (default: user@host)")
	return c
}

// whoami is the default "from" of a control: the user and the host.
func whoami() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return name
	}
	return name + "@" + host
}

// controlSuite appends the control as suite.controlled once the suite's
// facts, as they are at the append, allow it (projections.SuiteControl:
// submitted, not reported, a state the action applies to): the check and
// the append are one optimistic commit on the suite, so two controls sent
// at once are decided one after the other. A cancel then sends each of
// the suite's running runs a cancel signal citing the control, so that a
// run mid-turn stops at once; one it misses (claimed meanwhile) ends at
// its next turn boundary, where its runner reads the suite's state.
func controlSuite(ctx context.Context, b *bus.Bus, suite string, body events.SuiteControlled, out io.Writer) error {
	recs, err := b.Commit(ctx, nil, suite, events.SuiteScope, func(log bus.RunLog) ([]bus.Pending, error) {
		c := projections.FoldSuiteControl(suite, log.Facts())
		if c.Has(body.ID) {
			return nil, nil // committed by an earlier try of this commit
		}
		if err := c.Accept(body.Action); err != nil {
			return nil, err
		}
		f, err := events.NewFact(events.Meta{Suite: suite, Run: events.SuiteScope, Position: log.NextPosition(),
			Producer: events.Producer{Service: events.OwnerSubmitter, Instance: "factline-suite"}}, body)
		return []bus.Pending{{Fact: f, MsgID: events.SuiteScope + "/ctl/" + body.ID}}, err
	})
	if err != nil {
		return withSuitesHeld(ctx, b, fmt.Errorf("suite %s: %w", suite, err))
	}
	at := time.Now().UTC()
	if len(recs) > 0 {
		at = recs[0].Fact.At
	}
	fmt.Fprintf(out, "suite %s %s by %s at %s (suite.controlled %s)\n", suite, body.Action, body.From, at.Format(time.RFC3339), body.ID)
	if body.Action != events.SuiteCancel {
		return nil
	}
	r, err := meter.Report(ctx, b, suite)
	if err != nil {
		return fmt.Errorf("suite %s cancelled, but its running runs could not be listed (each ends at its next turn boundary): %w", suite, err)
	}
	sig := events.Control{ID: body.ID, Signal: events.SignalCancel, Reason: projections.SuiteControl{
		Controls: []projections.Control{{SuiteControlled: body}}}.CancelReason(), From: body.From}
	sent := 0
	for _, a := range r.Attempts {
		if !a.Started || a.Status != "" {
			continue
		}
		if err := b.Controls().Send(ctx, suite, a.Run, sig); err != nil {
			return fmt.Errorf("suite %s cancelled; cancel signal to run %s: %w (it ends at its next turn boundary)", suite, a.Run, err)
		}
		sent++
	}
	fmt.Fprintf(out, "sent cancel to %d running runs of %s; runs not started are never started\n", sent, suite)
	return nil
}
