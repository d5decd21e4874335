package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/sleep"
	"github.com/factline/factline/suites"
)

// controlSpec is one control command: the signal it sends and how many
// arguments it takes (commands.yaml holds its words, under the signal).
type controlSpec struct {
	sig events.Signal
	n   int
}

// newControlCmds are the five control commands. Each sends one signal to
// a run; the run's runner accepts it (or not) and records that as
// control.accepted, so sending is only a request. Each takes only its own
// flags.
func newControlCmds() []*cobra.Command {
	specs := []controlSpec{
		{events.SignalCancel, 1},
		{events.SignalSteer, 2},
		{events.SignalApprove, 2},
		{events.SignalReject, 2},
		{events.SignalResolve, 2},
	}
	var out []*cobra.Command
	for _, s := range specs {
		out = append(out, newControlCmd(s))
	}
	return out
}

func newControlCmd(s controlSpec) *cobra.Command {
	var t target
	var reason, digest, from, suite string
	var applied, notApplied bool
	var wait time.Duration
	want := fmt.Sprintf("want %d argument", s.n)
	if s.n > 1 {
		want += "s"
	}
	c := newCommand(string(s.sig), nil)
	c.Args = nameArgs(s.n, fmt.Sprintf("%s: factline %s", want, c.Use), "run")
	fs := onTarget(c, &t, func(ctx context.Context, args []string, out, _ io.Writer) error {
		ctl := events.Control{ID: events.NewID().String(), Signal: s.sig, Reason: reason, From: from}
		// The signal's own arguments are checked here, named as the
		// command line names them, before any store is opened: the bus
		// checks them again on send, but by their wire fields, and only
		// once the run was found.
		if s.n > 1 && strings.TrimSpace(args[1]) == "" {
			what := "OPERATION"
			if s.sig == events.SignalSteer {
				what = "TEXT"
			}
			return usageError{fmt.Sprintf("%s is empty: factline %s", what, c.Use)}
		}
		switch s.sig {
		case events.SignalSteer:
			ctl.Instruction = args[1]
		case events.SignalApprove, events.SignalReject:
			ctl.Operation = args[1]
			ctl.ArgsDigest = events.Digest(digest)
			if s.sig == events.SignalApprove {
				if digest == "" {
					return usageError{"approve needs --args-digest: the digest of the exact arguments approved (its dispatch.intended's args_digest, which the approve line factline run and the viewer print carries)"}
				}
				if err := ctl.ArgsDigest.Validate("args_digest"); err != nil {
					return usageError{fmt.Sprintf("--args-digest %q: want sha256: and 64 lowercase hex digits, as dispatch.intended records it (%v)", digest, err)}
				}
			}
		case events.SignalResolve:
			if applied == notApplied {
				return usageError{"say what you found: --applied or --not-applied"}
			}
			ctl.Operation, ctl.Outcome = args[1], events.OutcomeNotApplied
			if applied {
				ctl.Outcome = events.OutcomeApplied
			}
		}
		if wait < 0 {
			return usageError{"--wait must not be negative"}
		}
		if suite != "" {
			if err := events.ValidateToken("suite", suite); err != nil {
				return usageError{fmt.Sprintf("--suite %q: %v", suite, err)}
			}
		}
		return sendControl(ctx, &t, suite, args[0], ctl, wait, out)
	})
	fs.StringVar(&reason, "reason", "", "why (shown in the run's handoff)")
	fs.StringVar(&from, "from", "", "who sends the signal")
	fs.StringVar(&suite, "suite", "", "the suite of the run, needed when suites share the run's ID")
	fs.DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the runner to accept the signal (0: send and return, unconfirmed)")
	switch s.sig {
	case events.SignalApprove:
		fs.StringVar(&digest, "args-digest", "", "the digest of the exact arguments approved (from dispatch.intended)")
	case events.SignalResolve:
		fs.BoolVar(&applied, "applied", false, "the operation took effect")
		fs.BoolVar(&notApplied, "not-applied", false, "the operation did not take effect (it may run again)")
	}
	return c
}

// sendControl sends a control signal to a run, found by its ID alone
// unless suite names its suite, and waits (up to wait) for the log to say
// what became of it.
func sendControl(ctx context.Context, t *target, suite, run string, c events.Control, wait time.Duration, out io.Writer) error {
	b, closeBus, err := t.readsExisting().open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	if suite == "" {
		if suite, err = b.FindSuite(ctx, run); err != nil {
			return err
		}
	} else if err := runOfSuite(ctx, b, suite, run); err != nil {
		return err
	}
	if c.Signal == events.SignalSteer {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return err
		}
		// An ended run is left to awaitAcceptance, which says it ended.
		if !log.Ended() && runsExternalAgent(log.Facts()) {
			return fmt.Errorf("steer: run %s runs an external agent, which takes no steers: it has no channel for them, and its runner never accepts one (docs/agents.md#external-agents); nothing was sent. To stop it: factline cancel %s", run, run)
		}
	}
	if c.Operation != "" {
		log, err := b.LoadRun(ctx, suite, run)
		if err != nil {
			return err
		}
		// An ended run is left to awaitAcceptance, which says it ended.
		if !log.Ended() {
			if err := checkOperation(log.Facts(), run, c); err != nil {
				return err
			}
		}
	}
	if err := b.Controls().Send(ctx, suite, run, c); err != nil {
		return err
	}
	if wait == 0 {
		fmt.Fprintf(out, "sent %s %s to %s/%s; not waiting for its acceptance (control.accepted)\n", c.Signal, c.ID, suite, run)
		return nil
	}
	return awaitAcceptance(ctx, b, suite, run, c, wait, out)
}

// runsExternalAgent says whether the run's request names an external
// agent (the identity's agent component).
func runsExternalAgent(facts []events.Fact) bool {
	for _, f := range facts {
		if req, ok := f.Body.(events.RunRequested); ok {
			for _, c := range req.Components {
				if c.Name == suites.ComponentAgent {
					return true
				}
			}
			return false
		}
	}
	return false
}

// checkOperation refuses a signal about an operation that the run's log
// shows its runner would ignore: one the run never intended (a misspelt
// ID), one already settled, or an approval of other arguments than the
// operation's. The runner drops such a signal with a log line of its own,
// so the command would otherwise wait out --wait and then say only that
// nothing accepted it.
func checkOperation(facts []events.Fact, run string, c events.Control) error {
	type call struct {
		turn uint32
		id   events.CallID
	}
	var intent *events.DispatchIntended
	var unsettled []string
	intended := map[call]string{}
	for _, f := range facts {
		switch body := f.Body.(type) {
		case events.DispatchIntended:
			intended[call{body.Turn, body.CallID}] = body.OperationID
			if body.OperationID == c.Operation {
				intent = &body
			}
		case events.DispatchCompleted:
			delete(intended, call{body.Turn, body.Dispatch.CallID})
		}
	}
	for _, op := range intended {
		unsettled = append(unsettled, op)
	}
	slices.Sort(unsettled)
	open := "it has no operation in flight"
	if len(unsettled) > 0 {
		open = "its operations in flight: " + strings.Join(unsettled, ", ")
	}
	switch {
	case intent == nil:
		return fmt.Errorf("%s: run %s has no operation %q (%s); nothing was sent", c.Signal, run, c.Operation, open)
	case !slices.Contains(unsettled, c.Operation):
		return fmt.Errorf("%s: operation %s of run %s (%s, turn %d) is already settled: nothing waits for a %s; nothing was sent", c.Signal, c.Operation, run, intent.Tool, intent.Turn, c.Signal)
	case c.Signal == events.SignalApprove && c.ArgsDigest != intent.ArgsDigest:
		return fmt.Errorf("approve: --args-digest %s is not the digest of operation %s's arguments (%s): an approval binds the exact arguments, and the runner ignores one of other arguments; read the call's arguments (factline view, or factline tail --run %s --kind model.replied --since start --no-follow --json) before approving them; nothing was sent", c.ArgsDigest, c.Operation, intent.ArgsDigest, run)
	}
	return nil
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
			if !slices.ContainsFunc(log.Facts(), func(f events.Fact) bool { return f.Kind() == events.KindRunClaimed }) {
				// Queued, not lost: the runner that claims it takes the
				// signal in before its first turn.
				return fmt.Errorf("%s %s was sent to %s/%s but not accepted within %v: no runner has claimed the run yet; the runner that does takes the signal in before its first turn, if it claims the run while CONTROL keeps the signal (10 minutes by default); follow it with: factline tail --run %s --kind control.accepted", c.Signal, c.ID, suite, run, wait, run)
			}
			return fmt.Errorf("%s %s was sent to %s/%s but not accepted within %v (is a runner on the run? it takes signals at safe points; follow it with: factline tail --run %s --kind control.accepted)", c.Signal, c.ID, suite, run, wait, run)
		}
		if err := sleep.For(ctx, 100*time.Millisecond); err != nil {
			return err
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

// runOfSuite refuses a --suite that holds no run of the ID, naming the
// suites that do: a signal to a run nobody will ever claim would only wait
// out --wait.
func runOfSuite(ctx context.Context, b *bus.Bus, suite, run string) error {
	log, err := b.LoadRun(ctx, suite, run)
	if err != nil {
		return err
	}
	if len(log.Records) > 0 {
		return nil
	}
	suites, err := b.SuitesOfRun(ctx, run)
	if err != nil {
		return err
	}
	if len(suites) == 0 {
		return fmt.Errorf("no run %q in the log", run)
	}
	return fmt.Errorf("suite %q holds no run %q; the suites that do: %s", suite, run, strings.Join(suites, ", "))
}
