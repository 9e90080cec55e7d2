package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
)

// backfillConfig is "ticker schedule backfill" validated: the slots of
// name in (from, to], times shown in loc.
type backfillConfig struct {
	db       database
	name     string
	from, to time.Time
	loc      *time.Location
}

func scheduleBackfillCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "backfill [--db passage.db] --from T --to T [--tz ZONE] [--webhook URL]... NAME",
		Short: "run the slots of a past range that have no run yet, publishing each run like \"ticker run\"",
		Args:  oneSchedule,
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN holding the schedule")
	c.ValidArgsFunction = completeSchedules(dbf)
	from := c.Flags().String("from", "", "run the slots after this time (required): "+timeRule)
	to := c.Flags().String("to", "", "run the slots up to this time, included, which must not be in the future (required)")
	tz := addTZ(c, "IANA time zone of local --from and --to values, and of the summary")
	sinks := addSinks(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := sinks.check(); err != nil {
			return err
		}
		cfg := backfillConfig{name: args[0]}
		var err error
		if cfg.loc, err = tz.location(); err != nil {
			return err
		}
		if *from == "" || *to == "" {
			return usagef("--from and --to are required: the slots in (from, to] that have no run yet are run")
		}
		if cfg.from, err = parseTime("from", *from, cfg.loc); err != nil {
			return err
		}
		if cfg.to, err = parseTime("to", *to, cfg.loc); err != nil {
			return err
		}
		if !cfg.from.Before(cfg.to) {
			return usagef("--from %s is not before --to %s", timefmt.Format(cfg.from), timefmt.Format(cfg.to))
		}
		if now := env.clock().Now(); cfg.to.After(now) {
			return usagef("--to %s is in the future (now is %s): only slots that have passed are backfilled", timefmt.Format(cfg.to), timefmt.Format(now.In(cfg.loc)))
		}
		if cfg.db, err = dbf.database(); err != nil {
			return err
		}
		return backfill(c.Context(), env, cfg, sinks)
	}
	return c
}

// backfill runs cfg's slots that have no run yet, records and publishes
// each run, and says what it did.
func backfill(ctx context.Context, env Env, cfg backfillConfig, sinks *sinkFlags) error {
	out, handler, err := sinks.runsOut(ctx, env)
	if err != nil {
		return err
	}
	span := fmt.Sprintf("(%s, %s]", timefmt.Format(cfg.from.In(cfg.loc)), timefmt.Format(cfg.to.In(cfg.loc)))
	return changeSchedule(ctx, env, cfg.db, cfg.name, handler, func(s *schedule.Scheduler) error {
		runs, err := s.Backfill(ctx, cfg.name, cfg.from, cfg.to)
		err = errors.Join(err, sinks.printRuns(env, runs...))
		err = errors.Join(err, (*out).deliver(ctx, env))
		if err != nil {
			if len(runs) > 0 {
				// The runs before the failure are recorded and published;
				// backfilling again runs the rest and none of them twice.
				return fmt.Errorf("%w (%s recorded before it; backfill again for the rest)", err, plural(len(runs), "run", "runs"))
			}
			return err
		}
		fmt.Fprintf(env.Stderr, "backfilled %s of %s in %s", plural(len(runs), "run", "runs"), cfg.name, span)
		if len(runs) == 0 {
			fmt.Fprint(env.Stderr, ": no slot in it without a run")
		}
		fmt.Fprintln(env.Stderr)
		return nil
	})
}
