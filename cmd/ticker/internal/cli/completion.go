package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/schedule"
)

// completionCommand is "ticker completion bash|zsh|fish": cobra's
// scripts, which ask the binary itself ("ticker __complete …") what
// completes a word, schedule and workflow names among them.
func completionCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "print the shell completion script of bash, zsh or fish",
		Long: "Prints the script that completes ticker's commands, flags, schedule names and workflow instances in the shell named.\n" +
			"bash (with the bash-completion package): source <(ticker completion bash), or write it to /etc/bash_completion.d/ticker.\n" +
			"zsh: ticker completion zsh > \"${fpath[1]}/_ticker\".  fish: ticker completion fish > ~/.config/fish/completions/ticker.fish.",
		ValidArgs: []cobra.Completion{"bash", "zsh", "fish"},
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("give one shell: bash, zsh or fish (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(env.Stdout, true)
			case "zsh":
				return root.GenZshCompletion(env.Stdout)
			case "fish":
				return root.GenFishCompletion(env.Stdout, true)
			}
			return usagef("%q: not bash, zsh or fish", args[0])
		},
	}
}

// completionTimeout bounds a completion's read of the database: a shell
// waiting on a TAB must not hang on a database that does not answer.
const completionTimeout = 2 * time.Second

// completeSchedules completes the first argument with the names of the
// schedules in --db, read as "schedule list" reads them (read-only, one
// statement); nothing when the database cannot be read.
func completeSchedules(dbf *dbFlags) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, _ := withCompletionDB(c, dbf, func(ctx context.Context, snap *snapshot) ([]string, error) {
			page, err := schedule.ReadPage(ctx, snap.tx, schedule.PageQuery{Match: toComplete, Limit: schedule.MaxPageRows})
			var out []string
			for _, r := range page.Rows {
				out = append(out, r.Name)
			}
			return out, err
		})
		return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeInstances completes the first argument with the IDs of the
// workflow instances in --db that begin with the word (only the running
// ones when running), read a page (orchestration.ReadPage) in one
// statement.
func completeInstances(dbf *dbFlags, running bool) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		q := orchestration.PageQuery{Prefix: toComplete, Limit: orchestration.MaxInstancesRead}
		if running {
			q.State = orchestration.Running
		}
		ids, _ := withCompletionDB(c, dbf, func(ctx context.Context, snap *snapshot) ([]string, error) {
			page, _, err := orchestration.ReadPage(ctx, snap.tx, q)
			var out []string
			for _, s := range page {
				out = append(out, s.Instance)
			}
			return out, err
		})
		return matching(ids, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// withCompletionDB reads names from --db, opened read-only as the
// commands open it, within completionTimeout.
func withCompletionDB(c *cobra.Command, dbf *dbFlags, read func(context.Context, *snapshot) ([]string, error)) ([]string, error) {
	db, err := dbf.database()
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	snap, err := db.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.close()
	names, err := read(ctx, snap)
	if err != nil {
		return nil, fmt.Errorf("complete from %s: %w", db, err)
	}
	return names, nil
}

// matching is the names that begin with prefix.
func matching(names []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
