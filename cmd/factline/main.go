// Command factline is the one binary of the factline harness: a demo of the
// log, and the tools to export, import and replay it. Run "factline help"
// for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/factline/factline/events"
	"github.com/factline/factline/secrets"
)

// command is one subcommand of the binary.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, out io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "run a suite: submit it, run, grade and measure every attempt, print the report", runRun},
		{"audit", "check the log's invariants; exit non-zero naming each violation", runAudit},
		{"report", "print the meter's report of a suite, rebuilt from the log", runReport},
		{"demo", "start an embedded server, append a small run's facts, replay and print them", runDemo},
		{"serve", "run services (runner, staller, decider, …) against a store or a NATS server", runServe},
		{"tail", "follow facts (or control signals and status) as they are committed", runTail},
		{"replay", "rebuild a projection from a store, a server or an export file", runReplay},
		{"export", "write the facts of a store or a server to an export file", runExport},
		{"import", "load an export file into an empty store or server", runImport},
		{"projections", "list the projections replay knows", runProjections},
		{"decode", "print one raw stored message as JSON (for nats sub --translate, nats stream get)", runDecode},
		{"setup", "create the streams and buckets on a NATS server (as an identity allowed to)", runSetup},
		{"cancel", "ask a run's runner to cancel it", runControl(events.SignalCancel, "cancel RUN [--reason TEXT] (--store DIR | --nats URL)", 1)},
		{"steer", "add an instruction to a running task (a new task generation)", runControl(events.SignalSteer, "steer RUN TEXT (--store DIR | --nats URL)", 2)},
		{"approve", "approve an operation waiting for approval, bound to its exact arguments", runControl(events.SignalApprove, "approve RUN OPERATION --args-digest DIGEST (--store DIR | --nats URL)", 2)},
		{"reject", "reject an operation waiting for approval", runControl(events.SignalReject, "reject RUN OPERATION [--reason TEXT] (--store DIR | --nats URL)", 2)},
		{"resolve", "settle an operation of unknown outcome with what a person found", runControl(events.SignalResolve, "resolve RUN OPERATION --applied|--not-applied (--store DIR | --nats URL)", 2)},
	}
}

// usageError marks a mistake in how the command was called: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	// No secret the configuration names reaches a log line.
	red, err := secrets.FromEnvironment()
	if err != nil {
		fmt.Fprintf(os.Stderr, "factline: %v\n", err)
		os.Exit(1)
	}
	slog.SetDefault(slog.New(secrets.NewHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), red)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(out)
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			// A permission the server refuses ends the command: the refusal
			// arrives on the side, so it cancels the command and becomes
			// its error.
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			ctx = withViolationHook(ctx, func(err error) { cancel(err) })
			err := c.run(ctx, args[1:], out)
			var pe *PermissionError
			if errors.As(context.Cause(ctx), &pe) {
				err = pe
			}
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.As(err, new(usageError)):
				fmt.Fprintf(errOut, "factline %s: %v\n", c.name, err)
				fmt.Fprintf(errOut, "run 'factline %s --help' for usage\n", c.name)
				return 2
			default:
				fmt.Fprintf(errOut, "factline %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(errOut, "factline: unknown command %q\n", args[0])
	usage(errOut)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: factline <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "run 'factline <command> --help' for a command's flags")
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name, synopsis string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fs.SetOutput(out)
		fmt.Fprintf(out, "usage: factline %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags; a bad flag becomes a usageError.
func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return flag.ErrHelp
	}
	if err != nil {
		return usageError{err.Error()}
	}
	return nil
}
