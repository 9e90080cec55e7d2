package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// group is a command of subcommands ("ticker schedule", "ticker
// workflow"), summarised as what it holds and their names. Alone it lists
// them and is a usage error; "help [subcommand]" is a help.
func group(name, what string, subs ...*cobra.Command) *cobra.Command {
	// The group parses no flags of its own: "ticker workflow wait --db x"
	// is an unknown subcommand, not an unknown flag.
	g := &cobra.Command{Use: name + " <subcommand>", Args: cobra.ArbitraryArgs, DisableFlagParsing: true}
	g.AddCommand(subs...)
	names := make([]string, len(subs))
	for i, sub := range subs {
		names[i] = sub.Name()
	}
	g.Short = what + ": " + strings.Join(names, ", ")
	g.RunE = func(c *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			printHelp(c)
			return usagef("a subcommand is needed")
		case args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
			printHelp(c)
			return nil
		case args[0] == "help":
			target, rest, err := c.Find(args[1:])
			if err == nil && len(rest) == 0 {
				target.InitDefaultHelpFlag()
				return target.Help()
			}
		}
		return usagef("unknown subcommand %q (run \"%s -h\")", args[0], c.CommandPath())
	}
	return g
}
