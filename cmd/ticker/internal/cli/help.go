package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// printHelp writes c's help on its output: the root's list of commands,
// a group's list of subcommands, or a command's usage and flags.
func printHelp(c *cobra.Command) {
	w := c.OutOrStdout()
	if !c.HasParent() {
		fmt.Fprintln(w, c.Short)
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Usage: ticker <command> [flags]   (ticker help <command>, or ticker <command> --help, for its flags)")
		fmt.Fprintln(w)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(w, "  %-10s %s\n", sub.Name(), sub.Short)
			}
		}
		return
	}
}
