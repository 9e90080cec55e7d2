package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// printHelp writes c's help on its output: the root's list of commands,
// a group's list of subcommands, or a command's usage and flags.
func printHelp(c *cobra.Command) {
	w := c.OutOrStdout()
	switch {
	case !c.HasParent():
		fmt.Fprintln(w, c.Short)
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Usage: ticker <command> [flags]   (ticker help <command>, or ticker <command> --help, for its flags)")
		fmt.Fprintln(w)
		listCommands(c, 10)
	case c.HasSubCommands():
		fmt.Fprintf(w, "Usage: %s <subcommand> [flags]   (%s <subcommand> --help for its flags)\n\n", c.CommandPath(), c.CommandPath())
		listCommands(c, 8)
	default:
		// The flags' own values, not the onceValue wrapping them for the
		// parse (whose defaults pflag would not recognise as zero).
		unwrapOnce(c)
		fmt.Fprintf(w, "Usage: %s\n\n", c.UseLine())
		if c.Long != "" {
			fmt.Fprintf(w, "%s\n\n", c.Long)
		}
		fmt.Fprintf(w, "Flags:\n%s", c.LocalFlags().FlagUsages())
		if f := c.Flags().Lookup("db"); f != nil && f.DefValue == defaultDB {
			fmt.Fprintf(w, "\nEnvironment:\n  %s\n    \tthe default of --db, so that a DSN with a password is not on the command line (ps shows it);\n    \tPGPASSWORD and the other libpq variables also apply to a PostgreSQL DSN\n", dbEnv)
		}
	}
}

// listCommands lists c's subcommands, a line each: the name in a column
// of width, then what it does.
func listCommands(c *cobra.Command, width int) {
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			fmt.Fprintf(c.OutOrStdout(), "  %-*s %s\n", width, sub.Name(), sub.Short)
		}
	}
}
