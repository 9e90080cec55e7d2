package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
)

func schedulePruneCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "prune [--db passage.db] --older-than 720h | --before T [--tz ZONE]",
		Short: "delete the finished runs of every schedule whose slot is before a time (nothing else does)",
		Args:  noArgs,
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN holding the schedules")
	olderThan := c.Flags().Duration("older-than", 0, "delete the finished runs whose slot is older than this, e.g. 720h for 30 days")
	before := c.Flags().String("before", "", "delete the finished runs whose slot is before this time: "+timeRule)
	tz := addTZ(c, "IANA time zone of a local --before, and of the summary")
	c.RunE = func(c *cobra.Command, _ []string) error {
		loc, err := tz.location()
		if err != nil {
			return err
		}
		now := env.clock().Now()
		var cutoff time.Time
		switch {
		case (*olderThan == 0) == (*before == ""):
			return usagef("give exactly one of --older-than and --before: the finished runs whose slot is before it are deleted")
		case *before != "":
			if cutoff, err = parseTime("before", *before, loc); err != nil {
				return err
			}
			if cutoff.After(now) {
				return usagef("--before %s is in the future (now is %s)", timefmt.Format(cutoff), timefmt.Format(now.In(loc)))
			}
		case *olderThan < 0:
			return usagef("--older-than %s: must be positive", *olderThan)
		default:
			cutoff = now.Add(-*olderThan)
		}
		db, err := dbf.database()
		if err != nil {
			return err
		}
		return prune(c.Context(), env, db, cutoff, loc)
	}
	return c
}

// prune deletes the finished runs with a slot before cutoff.
func prune(ctx context.Context, env Env, db database, cutoff time.Time, loc *time.Location) error {
	return withSchedules(ctx, env, db, "", noRuns, func(s *schedule.Scheduler) error {
		n, err := s.PruneRuns(ctx, cutoff)
		if err != nil {
			// What was deleted before the failure stays deleted.
			return fmt.Errorf("%w (%s deleted before it)", err, plural(int(n), "run", "runs"))
		}
		fmt.Fprintf(env.Stdout, "pruned %s with a slot before %s\n", plural(int(n), "run", "runs"), timefmt.Format(cutoff.In(loc)))
		return nil
	})
}
