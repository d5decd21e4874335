package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/factline/factline/version"
)

// newVersionCmd prints which build of factline this is: the module
// version and, for a build from a checkout, its VCS revision (the same
// line as --version); --json gives the whole record.
func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := newCommand("version", noArgs)
	c.RunE = func(c *cobra.Command, _ []string) error {
		b := version.Current()
		if !asJSON {
			_, err := fmt.Fprintln(c.OutOrStdout(), b.String())
			return err
		}
		return printJSON(c.OutOrStdout(), b)
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the build as JSON: module, version, revision, time, modified, go")
	return c
}
