package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// completionShells are the shells 'factline completion' writes a script
// for, each with cobra's generator for it.
var completionShells = map[string]func(root *cobra.Command, w io.Writer, descriptions bool) error{
	"bash": func(root *cobra.Command, w io.Writer, d bool) error { return root.GenBashCompletionV2(w, d) },
	"zsh": func(root *cobra.Command, w io.Writer, d bool) error {
		if d {
			return root.GenZshCompletion(w)
		}
		return root.GenZshCompletionNoDesc(w)
	},
	"fish": func(root *cobra.Command, w io.Writer, d bool) error { return root.GenFishCompletion(w, d) },
}

// newCompletionCmd writes a shell completion script. The scripts ask the
// binary itself what to offer (cobra's hidden __complete command), so
// they stay right as commands and flags change.
func newCompletionCmd() *cobra.Command {
	var noDesc bool
	c := newCommand("completion", func(_ *cobra.Command, args []string) error {
		if len(args) != 1 || completionShells[args[0]] == nil {
			return usageError{fmt.Sprintf("name one shell: bash, zsh or fish (got %q)", args)}
		}
		return nil
	})
	c.ValidArgs = []cobra.Completion{"bash", "zsh", "fish"}
	c.RunE = func(c *cobra.Command, args []string) error {
		return completionShells[args[0]](c.Root(), c.OutOrStdout(), !noDesc)
	}
	c.Flags().BoolVar(&noDesc, "no-descriptions", false, "offer the choices without their descriptions")
	return c
}
