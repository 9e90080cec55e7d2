package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
)

// listedSchedule is a line of "schedule list", and an element of its
// --json array.
type listedSchedule struct {
	Name    string     `json:"name"`
	Next    *sink.Time `json:"next_slot"`
	Paused  bool       `json:"paused"`
	Runs    int64      `json:"runs"`
	Skipped int64      `json:"skipped"`
	Command string     `json:"command"`
	Spec    string     `json:"spec"`
	// MaxRuns and Until end the schedule; left out when it has no end.
	MaxRuns int64      `json:"max_runs,omitempty"`
	Until   *sink.Time `json:"until,omitempty"`
	// Jitter and Overlap are left out at their defaults (none, allow).
	Jitter  string `json:"jitter,omitempty"`
	Overlap string `json:"overlap,omitempty"`
}

func scheduleListCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "list [--db passage.db] [--tz ZONE] [--json]",
		Short: "list the stored schedules: next slot, paused, runs, skipped, end (max runs, until)",
		Args:  noArgs,
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN, opened read-only: list never creates, migrates or locks it")
	tz := addTZ(c, "IANA time zone to show the next slots in (without it, each schedule's own: its CRON_TZ or TZID, else UTC, as \"schedule add\" shows them)")
	// No UTC default shown: without --tz each schedule is shown in its zone.
	c.Flags().Lookup("tz").DefValue = ""
	asJSON := addJSON(c, "print a JSON array instead of a table")
	c.RunE = func(c *cobra.Command, _ []string) error {
		loc, err := tz.specZone()
		if err != nil {
			return err
		}
		db, err := dbf.database()
		if err != nil {
			return err
		}
		list, err := readSchedules(c.Context(), db, loc)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(env, list)
		}
		return printSchedules(env, list)
	}
	return c
}

// readSchedules reads every schedule db holds, by name, times in loc, or
// in each schedule's own zone when loc is nil.
// Read-only, like status, through the schedule package's inspection,
// which never migrates: schedule.Open would create its tables in a
// database that has none (readonly.go).
func readSchedules(ctx context.Context, db database, loc *time.Location) ([]listedSchedule, error) {
	snap, err := db.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.close()
	if has, err := schedule.HasState(ctx, snap.tx); err != nil {
		return nil, fmt.Errorf("read %s: %w", db, err)
	} else if !has {
		return nil, fmt.Errorf("--db %s: %w", db, errNoSchedules)
	}
	stored, err := schedule.ReadSchedules(ctx, snap.tx)
	if err != nil {
		return nil, fmt.Errorf("read the schedules: %w", err)
	}
	list := []listedSchedule{} // [] rather than null in JSON
	for _, s := range stored {
		l := listedSchedule{Name: s.Name, Paused: s.Paused, Runs: s.Runs, Skipped: s.Skipped, Command: s.Command, Spec: s.Spec, MaxRuns: int64(s.MaxRuns)}
		in := s.Zone
		if loc != nil {
			in = loc
		}
		if !s.Next.IsZero() {
			l.Next = sink.TimeOf(s.Next.In(in))
		}
		if !s.Until.IsZero() {
			l.Until = sink.TimeOf(s.Until.In(in))
		}
		if s.Jitter != 0 {
			l.Jitter = s.Jitter.String()
		}
		if o := overlapName(s.Overlap.String()); o != schedule.AllowOverlap.String() {
			l.Overlap = o
		}
		list = append(list, l)
	}
	return list, nil
}

// printSchedules prints the schedules as a table. MAX RUNS and UNTIL are
// shown when a schedule has an end, JITTER and OVERLAP when a schedule has
// one that is not the default (none, allow): the table of schedules
// without them stays as it was.
func printSchedules(env Env, list []listedSchedule) error {
	if len(list) == 0 {
		fmt.Fprintln(env.Stdout, "no schedules")
		return nil
	}
	ends, policies := false, false
	for _, l := range list {
		ends = ends || l.MaxRuns != 0 || l.Until != nil
		policies = policies || l.Jitter != "" || l.Overlap != ""
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	header := "NAME\tNEXT SLOT\tPAUSED\tRUNS\tSKIPPED\t"
	if ends {
		header += "MAX RUNS\tUNTIL\t"
	}
	if policies {
		header += "JITTER\tOVERLAP\t"
	}
	fmt.Fprintln(tw, header+"COMMAND\tSPEC")
	for _, l := range list {
		next, paused := "-", "no"
		if l.Next != nil {
			next = timefmt.Format(l.Next.Time)
		}
		if l.Paused {
			paused = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t", l.Name, next, paused, l.Runs, l.Skipped)
		if ends {
			maxRuns, until := "-", "-"
			if l.MaxRuns != 0 {
				maxRuns = fmt.Sprint(l.MaxRuns)
			}
			if l.Until != nil {
				until = timefmt.Format(l.Until.Time)
			}
			fmt.Fprintf(tw, "%s\t%s\t", maxRuns, until)
		}
		if policies {
			fmt.Fprintf(tw, "%s\t%s\t", cmp.Or(l.Jitter, "-"), cmp.Or(l.Overlap, schedule.AllowOverlap.String()))
		}
		// A recurrence rule's lines are shown as --spec takes them.
		fmt.Fprintf(tw, "%s\t%s\n", l.Command, strings.ReplaceAll(l.Spec, "\n", `\n`))
	}
	return tw.Flush()
}

// overlapName is the --overlap value of a stored overlap policy (the
// schedule package stores Overlap.String: allow, skip, buffer-one).
func overlapName(stored string) string {
	if stored == schedule.BufferOne.String() {
		return "buffer"
	}
	return stored
}
