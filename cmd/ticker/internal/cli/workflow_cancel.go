package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/orchestration"
)

func workflowCancelCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "cancel [--db passage.db] ID",
		Short: "ask a running instance to cancel: its compensations run",
		Args:  positional("exactly one instance id", 1),
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN of the orchestration engine holding the instance")
	c.ValidArgsFunction = completeInstances(dbf, true)
	c.RunE = func(c *cobra.Command, args []string) error {
		db, err := dbf.database()
		if err != nil {
			return err
		}
		ctx, id := c.Context(), args[0]
		return changeWorkflow(ctx, env, db, id, "cancel", func(e *orchestration.Engine) error {
			if err := e.Cancel(ctx, id); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "cancel requested for %s: its compensations run and it ends cancelled when a processor next ticks\n", id)
			return nil
		})
	}
	return c
}
