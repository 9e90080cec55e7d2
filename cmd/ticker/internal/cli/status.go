package cli

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
)

func statusCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "status [--db passage.db] [--tz UTC] [--json]",
		Short: "show each unit's cursor and lease, and every to-do list's backlog",
		Args:  noArgs,
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN the ticker runs on, opened read-only: status never creates, migrates or locks it")
	tz := addTZ(c, "IANA time zone to compute and show boundaries in")
	asJSON := addJSON(c, "print JSON instead of tables")
	c.RunE = func(c *cobra.Command, _ []string) error {
		loc, err := tz.location()
		if err != nil {
			return err
		}
		db, err := dbf.database()
		if err != nil {
			return err
		}
		return status(c.Context(), env, db, loc, *asJSON)
	}
	return c
}

// status prints what db holds of the tickers and the to-do lists, times
// in loc.
func status(ctx context.Context, env Env, db database, loc *time.Location, asJSON bool) error {
	// Read-only: status never migrates, never takes the write lock and
	// never creates a file or a table (readonly.go).
	snap, err := db.snapshot(ctx)
	if err != nil {
		return err
	}
	defer snap.close()
	if has, err := hasState(ctx, snap.tx); err != nil {
		return fmt.Errorf("read %s: %w", db, err)
	} else if !has {
		return fmt.Errorf("--db %s: %w", db, errNoState)
	}
	// The same function serves the dashboard's /api/status, so the two
	// never differ.
	report, err := dashboard.ReadStatus(ctx, snap.tx, env.clock().Now(), loc)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(env, report)
	}
	return printStatus(env, report)
}

func printStatus(env Env, r dashboard.Status) error {
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "now %s\n\n", timefmt.Format(r.Now.Time))
	for _, w := range r.Warnings {
		fmt.Fprintf(tw, "warning: %s\n\n", w)
	}
	if len(r.Units) == 0 {
		fmt.Fprintln(tw, "no cursors yet: the ticker has not run on this database")
	} else {
		fmt.Fprintln(tw, "UNIT\tCURSOR\tNEXT BOUNDARY\tBEHIND")
		for _, u := range r.Units {
			behind := strconv.Itoa(u.Behind)
			if u.Behind >= dashboard.BehindCap {
				behind += "+"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Unit, timefmt.Format(u.Cursor.Time), timefmt.Format(u.Next.Time), behind)
		}
	}
	fmt.Fprintln(tw)
	switch {
	case r.Lease == nil && len(r.Units) > 0:
		// "ticker run --once" releases it at every run.
		fmt.Fprintln(tw, "lease: none held (the last ticker released it as it stopped)")
	case r.Lease == nil:
		fmt.Fprintln(tw, "lease: none taken")
	default:
		state := "expired"
		if r.Lease.Live {
			state = "live"
		}
		fmt.Fprintf(tw, "lease: %s (term %d, %s until %s)\n", r.Lease.Holder, r.Lease.Term, state, timefmt.Format(r.Lease.Expires.Time))
	}
	fmt.Fprintln(tw)
	if len(r.Lists) == 0 {
		fmt.Fprintln(tw, "to-do lists: none yet")
	} else {
		fmt.Fprintln(tw, "TO-DO LIST\tPENDING\tDUE NOW\tPARKED\tOLDEST DUE\tLAG\tCOMPLETED\tFAILURES")
		for _, l := range r.Lists {
			oldest := "-"
			if l.OldestDue != nil {
				oldest = timefmt.Format(l.OldestDue.Time)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t%d\n", l.Name, l.Pending, l.Due, l.Parked, oldest, l.LagText(), l.Completed, l.Failures)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s := r.Schedules; s != nil && s.Schedules > 0 {
		// passage-schedules' COMPLETED stays 0 while schedules fire (an
		// item moves on to its next slot): this line says what they did.
		_, err := fmt.Fprintf(env.Stdout, "\nschedules: %d (%d paused), %s fired, %s skipped; %s holds one item per schedule, moved to its next slot at each run, completed only when the schedule ends\n",
			s.Schedules, s.Paused, plural(int(s.Runs), "run", "runs"), plural(int(s.Skipped), "slot", "slots"), schedule.ListName)
		return err
	}
	return nil
}
