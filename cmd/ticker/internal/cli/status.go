package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/tick"
)

// statusReport is what "ticker status --json" prints; its instants are
// sink.Times, lossless like the events.
type statusReport struct {
	Now      sink.Time    `json:"now"`
	Warnings []string     `json:"warnings"`
	Units    []unitStatus `json:"units"`
	Lease    *leaseStatus `json:"lease"`
	Lists    []listStatus `json:"todo_lists"`
}

type unitStatus struct {
	Unit   tick.Unit  `json:"unit"`
	Cursor *sink.Time `json:"cursor"`
	Next   sink.Time  `json:"next_boundary"`
	Behind int        `json:"behind"` // boundaries in (cursor, now], capped at behindCap
}

type leaseStatus struct {
	Holder  string    `json:"holder"`
	Term    int64     `json:"term"`
	Expires sink.Time `json:"expires"`
	Live    bool      `json:"live"`
}

type listStatus struct {
	Name      string     `json:"name"`
	Pending   int        `json:"pending"`
	Due       int        `json:"due_now"`
	Parked    int        `json:"parked"`
	OldestDue *sink.Time `json:"oldest_due"`
	Lag       string     `json:"lag"`
	Completed int64      `json:"completed_total"`
	Failures  int64      `json:"failures_total"`
}

// behindCap bounds how far status counts missed boundaries, so a cursor
// years behind costs nothing to display.
const behindCap = 100000

func statusCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "status", "[--db passage.db] [--tz UTC] [--json]")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN the ticker runs on, opened read-only: status never creates, migrates or locks it")
	tz := fs.String("tz", "UTC", "IANA time zone to compute and show boundaries in")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	if err := parse(fs, args); err != nil {
		return err
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	// Read-only: status never migrates, never takes the write lock and
	// never creates a file or a table (readonly.go).
	snap, err := openSnapshot(ctx, *dsn)
	if err != nil {
		return err
	}
	defer snap.close()
	tx, tables := snap.tx, snap.tables
	if !hasState(tables) {
		return fmt.Errorf("--db %s: %w", redact(*dsn), errNoState)
	}
	now := env.clock().Now().In(loc)
	// Empty lists, not null, so JSON consumers can iterate without checks.
	report := statusReport{Now: sink.Time{Time: now}, Warnings: []string{}, Units: []unitStatus{}, Lists: []listStatus{}}

	cursors, err := readCursors(ctx, tx, tables)
	if err != nil {
		return err
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
				"the %s cursor %s is not on a boundary of unit %s in %s: pass the --tz the ticker runs with", u, tick.FormatTime(c), u, loc))
		}
		report.Units = append(report.Units, unitStatus{Unit: u, Cursor: sink.TimeOf(c), Next: sink.Time{Time: tick.Next(u, c, loc)}, Behind: behind(u, c, now, loc)})
	}
	lease, err := readLease(ctx, tx, tables)
	if err != nil {
		return err
	}
	if lease.Holder != "" {
		report.Lease = &leaseStatus{Holder: lease.Holder, Term: lease.Term, Expires: sink.Time{Time: lease.Expires.In(loc)}, Live: lease.Expires.After(now)}
	}
	lists, err := readListStats(ctx, tx, tables, now)
	if err != nil {
		return err
	}
	for _, l := range lists {
		s := listStatus{Name: l.Name, Pending: l.Pending, Due: l.Due, Parked: l.Parked, Lag: "-", Completed: l.Completed, Failures: l.Failures}
		if !l.OldestDue.IsZero() {
			oldest := l.OldestDue.In(loc)
			s.OldestDue = sink.TimeOf(oldest)
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
	fmt.Fprintf(tw, "now %s\n\n", tick.FormatTime(r.Now.Time))
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Unit, tick.FormatTime(u.Cursor.Time), tick.FormatTime(u.Next.Time), behind)
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
		fmt.Fprintf(tw, "lease: %s (term %d, %s until %s)\n", r.Lease.Holder, r.Lease.Term, state, tick.FormatTime(r.Lease.Expires.Time))
	}
	fmt.Fprintln(tw)
	if len(r.Lists) == 0 {
		fmt.Fprintln(tw, "to-do lists: none yet")
	} else {
		fmt.Fprintln(tw, "TO-DO LIST\tPENDING\tDUE NOW\tPARKED\tOLDEST DUE\tLAG\tCOMPLETED\tFAILURES")
		for _, l := range r.Lists {
			oldest := "-"
			if l.OldestDue != nil {
				oldest = tick.FormatTime(l.OldestDue.Time)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t%d\n", l.Name, l.Pending, l.Due, l.Parked, oldest, l.Lag, l.Completed, l.Failures)
		}
	}
	return tw.Flush()
}
