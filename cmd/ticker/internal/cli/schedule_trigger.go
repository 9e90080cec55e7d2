package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
)

func scheduleTriggerCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "trigger [--db passage.db] [--webhook URL]... NAME",
		Short: "run a schedule now, outside its plan, publishing the run like \"ticker run\"",
		Args:  oneSchedule,
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN holding the schedule")
	c.ValidArgsFunction = completeSchedules(dbf)
	sinks := addSinks(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := sinks.check(); err != nil {
			return err
		}
		db, err := dbf.database()
		if err != nil {
			return err
		}
		ctx, name := c.Context(), args[0]
		out, handler, err := sinks.runsOut(ctx, env)
		if err != nil {
			return err
		}
		return changeSchedule(ctx, env, db, name, handler, func(s *schedule.Scheduler) error {
			run, err := s.Trigger(ctx, name)
			if err != nil {
				return err
			}
			if err := sinks.printRuns(env, run); err != nil {
				return err
			}
			fmt.Fprintf(env.Stderr, "triggered %s: run %s at %s (slot id %s)\n", name, run.RunID, timefmt.Format(run.FiredAt), run.SlotID)
			return (*out).deliver(ctx, env)
		})
	}
	return c
}
