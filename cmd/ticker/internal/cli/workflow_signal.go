package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/orchestration"
)

func workflowSignalCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "signal [--db passage.db] [--payload JSON] ID NAME",
		Short: "send a signal (with a JSON payload) to a running instance",
		Args:  positional("an instance id and a signal name", 2),
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN of the orchestration engine holding the instance")
	c.ValidArgsFunction = completeInstances(dbf, true)
	payload := c.Flags().String("payload", "", "the signal's payload, a JSON value the instance's Await decodes (default none: null)")
	c.RunE = func(c *cobra.Command, args []string) error {
		id, name := args[0], args[1]
		if name == "" {
			return usagef("the signal name must not be empty")
		}
		raw := json.RawMessage("null")
		if *payload != "" {
			if !json.Valid([]byte(*payload)) {
				var v any
				err := json.Unmarshal([]byte(*payload), &v)
				return usagef("--payload %q: not a JSON value: %v", *payload, err)
			}
			raw = json.RawMessage(*payload)
		}
		db, err := dbf.database()
		if err != nil {
			return err
		}
		ctx := c.Context()
		return changeWorkflow(ctx, env, db, id, "read", func(e *orchestration.Engine) error {
			if err := e.Signal(ctx, id, name, raw); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "signalled %s: %s %s (it runs when a processor next ticks)\n", id, name, compact(raw))
			return nil
		})
	}
	return c
}
