// Command factline is the one binary of the factline harness: it runs
// suites and services, and reads, steers and replays the log. Run
// "factline help" for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/factline/factline/secrets"
)

// usageError marks a mistake in how the command was called: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// fileError marks a file the command was given (a suite, an allowlist, a
// credential) that is missing, unreadable or malformed: exit status 2,
// like a usage error, since the input was wrong and nothing ran, but with
// no pointer to --help, which says nothing about the file. The message
// names the file, and where in it when that is known.
type fileError struct{ err error }

func (e fileError) Error() string { return e.err.Error() }

// Unwrap keeps the file's error matchable (fs.ErrNotExist …).
func (e fileError) Unwrap() error { return e.err }

// errNoCommand is bare "factline": the command list has been printed to
// stderr, and the exit status is 2 with nothing more to say.
var errNoCommand = errors.New("no command given")

// logSecrets is the redactor under the process's log: main makes it from
// what the environment names before any command runs. Tests, which call
// run without main, get an empty one to read.
var logSecrets = secrets.New()

// findingsLog is the process's logger for security findings (a secret
// file open to others): main makes it on the handler of the process's
// log, with no level, so --log-level never hides one. Nil where main did
// not run (tests calling run): findings then go to the default logger.
var findingsLog *slog.Logger

// findings is the logger for a security finding: a warning that a
// credential is exposed is printed whatever the log level says.
func findings() *slog.Logger {
	if findingsLog != nil {
		return findingsLog
	}
	return slog.Default()
}

func main() {
	// No secret the configuration names reaches a log line.
	red, err := secrets.FromEnvironment()
	if err != nil {
		fmt.Fprintf(os.Stderr, "factline: %v\n", err)
		os.Exit(1)
	}
	logSecrets = red
	// The one handler of the process: its level is --log-level's (or
	// $FACTLINE_LOG_LEVEL's), set once the command line is read (logLevelFlag).
	if lvl, ok := parseLogLevel(os.Getenv(LogLevelEnv)); ok {
		logLevel.Set(lvl) // for what main itself logs before
	}
	slog.SetDefault(slog.New(secrets.NewHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}), logSecrets)))
	findingsLog = slog.New(secrets.NewHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}), logSecrets))
	// The files the redactor read are held to the rule a flag's secret
	// file is: one any user may change is refused, as a file error.
	if err := checkSecretFilesEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "factline: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns its exit status: 0 on
// success (and for help), 2 for a mistake in how it was called, a status
// of its own for an exitError (a gate that failed, a suite that could not
// complete), 1 for anything else. Each call builds its own command tree, so tests may run
// several at once.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	// A permission the server refuses ends the command: the refusal
	// arrives on the side, so it cancels the command and becomes its
	// error.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx = withViolationHook(ctx, func(err error) { cancel(err) })

	root := newRoot()
	// Never nil: cobra reads os.Args when given no arguments.
	root.SetArgs(append([]string{}, args...))
	root.SetOut(out)
	root.SetErr(errOut)
	// Errors cobra finds before a command's own code runs (an unknown
	// command, a missing argument) are mistakes in the call.
	var ran bool
	visit(root, func(c *cobra.Command) {
		if inner := c.RunE; inner != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error { ran = true; return inner(cmd, args) }
		}
	})
	cmd, err := root.ExecuteContextC(ctx)
	var pe *PermissionError
	if errors.As(context.Cause(ctx), &pe) {
		err = pe
	}
	if cmd == nil {
		cmd = root
	}
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errNoCommand):
		return 2
	case errors.As(err, &ee):
		fmt.Fprintf(errOut, "%s: %v\n", cmd.CommandPath(), err)
		return ee.code
	case errors.As(err, new(fileError)):
		fmt.Fprintf(errOut, "%s: %v\n", cmd.CommandPath(), err)
		return 2
	case errors.As(err, new(usageError)) || !ran && !errors.As(err, new(*PermissionError)):
		fmt.Fprintf(errOut, "%s: %v\n", cmd.CommandPath(), err)
		fmt.Fprintf(errOut, "see '%s --help'\n", cmd.CommandPath())
		return 2
	default:
		fmt.Fprintf(errOut, "%s: %v\n", cmd.CommandPath(), err)
		return 1
	}
}

// visit calls f on c and every command below it.
func visit(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		visit(sub, f)
	}
}
