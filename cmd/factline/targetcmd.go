package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runFunc is a command's work, given what cobra hands its RunE unpacked:
// the command's context, its arguments, and where its output and its
// messages go.
type runFunc func(ctx context.Context, args []string, out, errOut io.Writer) error

// onTarget finishes c, a command that opens the log at t: run does its
// work, and t's connection flags are registered beside c's own. It
// returns c's flag set, for the command's own flags.
func onTarget(c *cobra.Command, t *target, run runFunc) *pflag.FlagSet {
	c.RunE = func(c *cobra.Command, args []string) error {
		return run(c.Context(), args, c.OutOrStdout(), c.ErrOrStderr())
	}
	fs := c.Flags()
	t.flags(fs)
	return fs
}

// oneArg is the runFunc of a command that takes exactly one argument
// (its Args checks that before run is called).
func oneArg(run func(ctx context.Context, arg string, out, errOut io.Writer) error) runFunc {
	return func(ctx context.Context, args []string, out, errOut io.Writer) error {
		return run(ctx, args[0], out, errOut)
	}
}
