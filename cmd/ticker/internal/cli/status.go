package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// statusReport is what "ticker status --json" prints.
type statusReport struct {
	Now      time.Time    `json:"now"`
	Warnings []string     `json:"warnings"`
	Units    []unitStatus `json:"units"`
	Lease    *leaseStatus `json:"lease"`
	Lists    []listStatus `json:"todo_lists"`
}

type unitStatus struct {
	Unit   tick.Unit  `json:"unit"`
	Cursor *time.Time `json:"cursor"`
	Next   time.Time  `json:"next_boundary"`
	Behind int        `json:"behind"` // boundaries in (cursor, now], capped at behindCap
}

type leaseStatus struct {
	Holder  string    `json:"holder"`
	Term    int64     `json:"term"`
	Expires time.Time `json:"expires"`
	Live    bool      `json:"live"`
}

type listStatus struct {
	Name      string     `json:"name"`
	Pending   int        `json:"pending"`
	Due       int        `json:"due_now"`
	Parked    int        `json:"parked"`
	OldestDue *time.Time `json:"oldest_due"`
	Lag       string     `json:"lag"`
	Completed int64      `json:"completed_total"`
	Failures  int64      `json:"failures_total"`
}

// behindCap bounds how far status counts missed boundaries, so a cursor
// years behind costs nothing to display.
const behindCap = 100000

func statusCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "status", "[--db passage.db] [--tz UTC] [--json]")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN the ticker runs on")
	tz := fs.String("tz", "UTC", "IANA time zone to compute and show boundaries in")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	if err := parse(fs, args); err != nil {
		return err
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := tick.NewSQLStore(ctx, db.DB)
	if err != nil {
		return fmt.Errorf("read cursors in %s: %w", *dsn, err)
	}
	now := env.clock().Now().In(loc)
	// Empty lists, not null, so JSON consumers can iterate without checks.
	report := statusReport{Now: now, Warnings: []string{}, Units: []unitStatus{}, Lists: []listStatus{}}

	cursors, err := store.Cursors(ctx)
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	for _, u := range tick.Units() {
		c, ok := cursors[u]
		if !ok {
			continue
		}
		c = c.In(loc)
		if !tick.Previous(u, c, loc).Equal(c) {
			// The ticker ran in another zone: next boundaries computed
			// here would be wrong, so say so rather than mislead.
			report.Warnings = append(report.Warnings, fmt.Sprintf(
				"the %s cursor %s is not on a boundary of unit %s in %s: pass the --tz the ticker runs with", u, c.Format(time.RFC3339), u, loc))
		}
		report.Units = append(report.Units, unitStatus{Unit: u, Cursor: &c, Next: tick.Next(u, c, loc), Behind: behind(u, c, now, loc)})
	}
	lease, err := store.Lease(ctx)
	if err != nil {
		return fmt.Errorf("read lease: %w", err)
	}
	if lease.Holder != "" {
		report.Lease = &leaseStatus{Holder: lease.Holder, Term: lease.Term, Expires: lease.Expires.In(loc), Live: lease.Expires.After(now)}
	}
	lists, err := todolist.AllStats(ctx, db.DB, now)
	if err != nil {
		return fmt.Errorf("read to-do lists: %w", err)
	}
	for _, l := range lists {
		s := listStatus{Name: l.Name, Pending: l.Pending, Due: l.Due, Parked: l.Parked, Lag: "-", Completed: l.Completed, Failures: l.Failures}
		if !l.OldestDue.IsZero() {
			oldest := l.OldestDue.In(loc)
			s.OldestDue = &oldest
			s.Lag = now.Sub(oldest).Round(time.Second).String()
		}
		report.Lists = append(report.Lists, s)
	}

	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return printStatus(env, report)
}

func behind(u tick.Unit, cursor, now time.Time, loc *time.Location) int {
	n := 0
	for range tick.Boundaries(u, cursor, now, loc) {
		if n++; n >= behindCap {
			break
		}
	}
	return n
}

func printStatus(env Env, r statusReport) error {
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "now %s\n\n", r.Now.Format(time.RFC3339))
	for _, w := range r.Warnings {
		fmt.Fprintf(tw, "warning: %s\n\n", w)
	}
	if len(r.Units) == 0 {
		fmt.Fprintln(tw, "no cursors yet: the ticker has not run on this database")
	} else {
		fmt.Fprintln(tw, "UNIT\tCURSOR\tNEXT BOUNDARY\tBEHIND")
		for _, u := range r.Units {
			behind := strconv.Itoa(u.Behind)
			if u.Behind >= behindCap {
				behind += "+"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Unit, u.Cursor.Format(time.RFC3339), u.Next.Format(time.RFC3339), behind)
		}
	}
	fmt.Fprintln(tw)
	if r.Lease == nil {
		fmt.Fprintln(tw, "lease: none taken")
	} else {
		state := "expired"
		if r.Lease.Live {
			state = "live"
		}
		fmt.Fprintf(tw, "lease: %s (term %d, %s until %s)\n", r.Lease.Holder, r.Lease.Term, state, r.Lease.Expires.Format(time.RFC3339))
	}
	fmt.Fprintln(tw)
	if len(r.Lists) == 0 {
		fmt.Fprintln(tw, "to-do lists: none yet")
	} else {
		fmt.Fprintln(tw, "TO-DO LIST\tPENDING\tDUE NOW\tPARKED\tOLDEST DUE\tLAG\tCOMPLETED\tFAILURES")
		for _, l := range r.Lists {
			oldest := "-"
			if l.OldestDue != nil {
				oldest = l.OldestDue.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t%d\n", l.Name, l.Pending, l.Due, l.Parked, oldest, l.Lag, l.Completed, l.Failures)
		}
	}
	return tw.Flush()
}
