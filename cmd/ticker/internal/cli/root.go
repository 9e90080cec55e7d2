package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

func init() {
	// The commands in the order of the help: what runs, what reads, what
	// changes, then the rest.
	cobra.EnableCommandSorting = false
}

// Command is the ticker command tree on env: the root "ticker" and a
// command for each of its subcommands. Main executes it; the flag
// reference in docs/reference is generated from it.
func Command(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "ticker",
		Short: "ticker publishes the passage of time as domain events.",
		// Errors and usage are Main's to print, once, with the exit code
		// they mean.
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true, // the reference is the same every time
		Args:              cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				printHelp(c)
				return errUsageShown
			}
			return rootError{`unknown command "` + args[0] + `" (run "ticker -h")`}
		},
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { printHelp(c) })
	root.SetHelpCommand(helpCommand(root))
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		runCommand(env),
		statusCommand(env),
		previewCommand(env),
		scheduleCommand(env),
		workflowCommand(env),
		serveCommand(env),
		demoCommand(env),
		versionCommand(env),
		completionCommand(env),
	)
	synopses(root)
	return root
}

// synopses makes each command's usage line its Use as written, which
// shows its flags: cobra would add "[flags]" after it.
func synopses(c *cobra.Command) {
	c.DisableFlagsInUseLine = true
	for _, sub := range c.Commands() {
		synopses(sub)
	}
}

// helpCommand is "ticker help [command]": the help of the command named,
// however deep ("ticker help schedule add"), and a usage error for a
// command there is not.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "show the help of a command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return rootError{`unknown command "` + strings.Join(args, " ") + `" (run "ticker -h")`}
			}
			target.InitDefaultHelpFlag() // listed in the help, as on --help
			return target.Help()
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
}
