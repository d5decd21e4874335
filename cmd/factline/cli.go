package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/factline/factline/events"
	"github.com/factline/factline/version"
)

// Command groups, in the order the command list shows them.
const (
	groupSuites   = "suites"
	groupLog      = "log"
	groupControls = "controls"
	groupSetup    = "setup"
)

func init() {
	// The command list keeps the order newRoot gives it: by group, the
	// commands people use most first.
	cobra.EnableCommandSorting = false
}

// newRoot builds the whole command tree. It holds no state between calls:
// every command's flags are bound to variables made here.
func newRoot() *cobra.Command {
	root := newCommand("factline", nil) // cobra's own check names an unknown command, with suggestions
	root.Version = version.Current().String()
	// Bare "factline" is a mistake: the command list goes to stderr.
	root.RunE = func(c *cobra.Command, _ []string) error {
		fmt.Fprint(c.ErrOrStderr(), c.UsageString())
		return errNoCommand
	}
	root.SilenceErrors = true
	root.SilenceUsage = true
	// The completion command is factline's own (bash, zsh, fish).
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the build's version and exit")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	logLevelFlag(root)
	root.SetUsageFunc(usage)
	root.AddGroup(
		&cobra.Group{ID: groupSuites, Title: "Running suites:"},
		&cobra.Group{ID: groupLog, Title: "Reading the log:"},
		&cobra.Group{ID: groupControls, Title: "Steering runs (a request; the runner's acceptance is a fact):"},
		&cobra.Group{ID: groupSetup, Title: "Setting up and about factline:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupSuites, newRunCmd(), newServeCmd(), newReportCmd(), newCompareCmd(), newRegradeCmd(), newRetryCmd(), newWhatifCmd())
	add(groupLog, newViewCmd(), newTailCmd(), newReplayCmd(), newTraceCmd(), newProjectionsCmd(), newExportCmd(), newImportCmd(), newAuditCmd(), newDecodeCmd())
	add(groupControls, append(newControlCmds(), newSuiteCmd())...)
	add(groupSetup, newSetupCmd(), newDemoCmd(), newVersionCmd(), newCompletionCmd())
	help := newHelpCmd()
	help.GroupID = groupSetup
	root.SetHelpCommand(help)
	return root
}

// newHelpCmd is "factline help [COMMAND]". Unlike cobra's own, it calls an
// unknown command a usage error instead of printing the list and
// succeeding.
func newHelpCmd() *cobra.Command {
	c := newCommand("help", cobra.ArbitraryArgs)
	c.ValidArgsFunction = func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, sub := range c.Root().Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	c.RunE = func(c *cobra.Command, args []string) error {
		target, rest, err := c.Root().Find(args)
		if err != nil || len(rest) > 0 {
			return usageError{fmt.Sprintf("no command %q: 'factline help' lists them", strings.Join(args, " "))}
		}
		target.SetOut(c.OutOrStdout())
		target.InitDefaultHelpFlag()
		return target.Help()
	}
	return c
}

// connectionGroup marks the flags that say where the log is and who
// connects to it; help lists them apart from a command's own flags.
const connectionGroup = "factline-connection"

// markConnection puts the named flags of fs into the connection group.
func markConnection(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		_ = fs.SetAnnotation(n, connectionGroup, []string{"true"})
	}
}

// usage writes a command's usage: how to call it, its subcommands (the
// root's, by group), its own flags, and the connection flags apart.
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:\n")
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "  %s COMMAND [flags]\n", c.CommandPath())
	} else {
		fmt.Fprintf(&b, "  %s\n", c.UseLine())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	if c.HasAvailableSubCommands() {
		pad := 0
		for _, sub := range c.Commands() {
			pad = max(pad, len(sub.Name()))
		}
		for _, g := range c.Groups() {
			fmt.Fprintf(&b, "\n%s\n", g.Title)
			for _, sub := range c.Commands() {
				if sub.GroupID == g.ID && (sub.IsAvailableCommand() || sub.Name() == "help") {
					fmt.Fprintf(&b, "  %-*s  %s\n", pad, sub.Name(), sub.Short)
				}
			}
		}
	}
	own, conn := pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("connection", pflag.ContinueOnError)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Annotations[connectionGroup]; ok {
			conn.AddFlag(f)
		} else {
			own.AddFlag(f)
		}
	})
	if own.HasAvailableFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", own.FlagUsages())
	}
	if conn.HasAvailableFlags() {
		fmt.Fprintf(&b, "\nWhere the log is, and who connects to it (docs/cli.md):\n%s", conn.FlagUsages())
	}
	if c.HasParent() && c.InheritedFlags().HasAvailableFlags() {
		// --log-level, which every command takes from the root.
		fmt.Fprintf(&b, "\nEvery command's (docs/cli.md#logging):\n%s", c.InheritedFlags().FlagUsages())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nRun '%s COMMAND --help' for a command's flags; docs/cli.md has them all.\n", c.CommandPath())
	}
	_, err := io.WriteString(c.OutOrStderr(), b.String())
	return err
}

// exactArgs accepts exactly n arguments; want says what they are.
func exactArgs(n int, want string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Sprintf("%s (got %d)", want, len(args))}
		}
		return nil
	}
}

// nameArgs is exactArgs whose first argument names a suite (what "suite")
// or a run (what "run"): one that can be no subject token is a mistake in
// the call, refused before a store is opened (or made) to look it up.
func nameArgs(n int, want, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := exactArgs(n, want)(c, args); err != nil {
			return err
		}
		check := func(tok string) error { return events.ValidateToken("suite", tok) }
		if what == "run" {
			check = events.ValidateRunID
		}
		if err := check(args[0]); err != nil {
			return usageError{fmt.Sprintf("%s %q: %v", what, args[0], err)}
		}
		return nil
	}
}

// maxArgs accepts at most n arguments; want says what they are.
func maxArgs(n int, want string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > n {
			return usageError{fmt.Sprintf("%s (got %d: %s)", want, len(args), strings.Join(args, " "))}
		}
		return nil
	}
}

// noArgs refuses every argument: flags only.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("%s takes no arguments, got %q (flags start with --)", c.Name(), args[0])}
	}
	return nil
}

// fixedCompletions offers a flag or argument a fixed list of values.
func fixedCompletions(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}
