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
	c := &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "print a shell completion script for bash, zsh or fish",
		Long: "Print a shell completion script. Load it in the current shell, or install it:\n\n" +
			"  bash:  source <(factline completion bash)\n" +
			"         factline completion bash > /etc/bash_completion.d/factline   (needs bash-completion)\n" +
			"  zsh:   factline completion zsh > \"${fpath[1]}/_factline\"   (with compinit enabled)\n" +
			"  fish:  factline completion fish > ~/.config/fish/completions/factline.fish",
		ValidArgs: []cobra.Completion{"bash", "zsh", "fish"},
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || completionShells[args[0]] == nil {
				return usageError{fmt.Sprintf("name one shell: bash, zsh or fish (got %q)", args)}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return completionShells[args[0]](c.Root(), c.OutOrStdout(), !noDesc)
		},
	}
	c.Flags().BoolVar(&noDesc, "no-descriptions", false, "offer the choices without their descriptions")
	return c
}
