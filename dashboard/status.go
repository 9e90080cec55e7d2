package dashboard

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// Status is what /api/status returns and "ticker status --json" prints:
// the same type, read by the same function ([ReadStatus]). Its instants
// are [Time]s, lossless.
type Status struct {
	Now Time `json:"now"`
	// BehindCap is where a unit's Behind stops counting (BehindCap).
	BehindCap int          `json:"behind_cap"`
	Warnings  []string     `json:"warnings"`
	Units     []UnitStatus `json:"units"`
	Lease     *LeaseStatus `json:"lease"`
	Lists     []ListStatus `json:"todo_lists"`
	// Schedules sums up the stored schedules; nil (left out of JSON)
	// where the database has none.
	Schedules *ScheduleTotals `json:"schedules,omitempty"`
}

// ScheduleTotals sums up the stored schedules (schedule.ReadTotals):
// their to-do list counts nothing completed while they fire, since each
// firing moves its item to the next slot, so these say what they did.
type ScheduleTotals struct {
	Schedules int64 `json:"schedules"`
	Paused    int64 `json:"paused"`
	Runs      int64 `json:"runs"`
	Skipped   int64 `json:"skipped"`
}

// UnitStatus is one ticker unit's cursor: the last boundary emitted.
type UnitStatus struct {
	Unit   tick.Unit `json:"unit"`
	Cursor *Time     `json:"cursor"`
	// Next is the boundary after the cursor: the next one to emit.
	Next Time `json:"next_boundary"`
	// Behind counts the boundaries in (cursor, now], capped at BehindCap;
	// BehindCapped says it reached the cap (there may be more).
	Behind       int  `json:"behind"`
	BehindCapped bool `json:"behind_capped"`
}

// LeaseStatus is the lease that elects the one emitting ticker.
type LeaseStatus struct {
	Holder  string `json:"holder"`
	Term    int64  `json:"term"`
	Expires Time   `json:"expires"`
	Live    bool   `json:"live"`
}

// ListStatus is one to-do list's counts, as todolist.Stats has them.
type ListStatus struct {
	Name      string `json:"name"`
	Pending   int    `json:"pending"`
	Due       int    `json:"due_now"`
	Parked    int    `json:"parked"`
	OldestDue *Time  `json:"oldest_due"`
	// Lag is how long the oldest due item has waited, rounded to the
	// second; nil (JSON null) when nothing is due.
	Lag       *string `json:"lag"`
	Completed int64   `json:"completed_total"`
	Failures  int64   `json:"failures_total"`
}

// BehindCap bounds how far [ReadStatus] counts missed boundaries, so a
// cursor years behind costs nothing to display.
const BehindCap = 100000

// ReadStatus reads the ticker's cursors and lease and every to-do list's
// counts at now, showing instants in loc. It only reads (no migration, no
// write lock), and a database the ticker never ran on reads as empty. A
// cursor that is not on a boundary of its unit in loc (the ticker ran in
// another zone) adds a warning instead of a wrong next boundary. q is a
// *sqlx.DB, or a *sqlx.Tx for a consistent snapshot (as "ticker status"
// reads).
func ReadStatus(ctx context.Context, q sqlx.ExtContext, now time.Time, loc *time.Location) (Status, error) {
	now = now.In(loc)
	// Empty lists, not null, so JSON consumers can iterate without checks.
	report := Status{Now: Time{Time: now}, BehindCap: BehindCap, Warnings: []string{}, Units: []UnitStatus{}, Lists: []ListStatus{}}
	cursors, err := tick.ReadCursors(ctx, q)
	if err != nil {
		return Status{}, err
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
				"the %s cursor %s is not on a boundary of unit %s in %s: pass the --tz the ticker runs with", u, timefmt.Format(c), u, loc))
		}
		n := behind(u, c, now, loc)
		report.Units = append(report.Units, UnitStatus{Unit: u, Cursor: TimeOf(c), Next: Time{Time: tick.Next(u, c, loc)}, Behind: n, BehindCapped: n >= BehindCap})
	}
	lease, err := tick.ReadLease(ctx, q)
	if err != nil {
		return Status{}, err
	}
	if lease.Holder != "" {
		report.Lease = &LeaseStatus{Holder: lease.Holder, Term: lease.Term, Expires: Time{Time: lease.Expires.In(loc)}, Live: lease.Expires.After(now)}
	}
	lists, err := todolist.ReadStats(ctx, q, now)
	if err != nil {
		return Status{}, err
	}
	for _, l := range lists {
		report.Lists = append(report.Lists, listStatus(l, now, loc))
	}
	if has, err := schedule.HasState(ctx, q); err != nil {
		return Status{}, err
	} else if has {
		t, err := schedule.ReadTotals(ctx, q)
		if err != nil {
			return Status{}, err
		}
		report.Schedules = &ScheduleTotals{Schedules: t.Schedules, Paused: t.Paused, Runs: t.Runs, Skipped: t.Skipped}
	}
	return report, nil
}

// LagText is Lag as a page or a table shows it: "-" when nothing is due.
func (s ListStatus) LagText() string {
	if s.Lag == nil {
		return "-"
	}
	return *s.Lag
}

func listStatus(l todolist.ListStats, now time.Time, loc *time.Location) ListStatus {
	s := ListStatus{Name: l.Name, Pending: l.Pending, Due: l.Due, Parked: l.Parked, Completed: l.Completed, Failures: l.Failures}
	if !l.OldestDue.IsZero() {
		oldest := l.OldestDue.In(loc)
		s.OldestDue = TimeOf(oldest)
		lag := now.Sub(oldest).Round(time.Second).String()
		s.Lag = &lag
	}
	return s
}

func behind(u tick.Unit, cursor, now time.Time, loc *time.Location) int {
	n := 0
	for range tick.Boundaries(u, cursor, now, loc) {
		if n++; n >= BehindCap {
			break
		}
	}
	return n
}

// Time is an instant whose JSON form is lossless (tick.JSONTime): RFC 3339
// with the offset's seconds when it has any.
type Time = tick.JSONTime

// TimeOf returns t as a *Time; the zero time is nil (JSON null).
func TimeOf(t time.Time) *Time { return tick.JSONTimeOf(t) }
