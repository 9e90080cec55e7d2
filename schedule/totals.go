package schedule

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Totals sums up the stored schedules, for a status line.
type Totals struct {
	// Schedules counts the stored schedules, Paused those paused.
	Schedules, Paused int64
	// Runs counts the runs fired by their plans (manual runs not
	// included), Skipped the slots a catch-up policy did not fire.
	Runs, Skipped int64
}

// totalsQuery is the same on both databases.
const totalsQuery = `SELECT COUNT(*), COALESCE(SUM(CASE WHEN paused <> 0 THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(runs), 0), COALESCE(SUM(skipped), 0) FROM schedule_schedules`

// ReadTotals sums up the schedules q reads in one statement, without
// reading each one; a database without the package's tables has none. It
// only reads: q may be a read-only transaction.
//
// The scheduler's to-do list ("passage-schedules") counts nothing
// completed while schedules fire, since each firing moves its item to the
// next slot instead of removing it: these are the figures that say how
// much the schedules did.
func ReadTotals(ctx context.Context, q sqlx.ExtContext) (Totals, error) {
	var t Totals
	if ok, err := HasState(ctx, q); err != nil || !ok {
		return t, err
	}
	err := q.QueryRowxContext(ctx, totalsQuery).Scan(&t.Schedules, &t.Paused, &t.Runs, &t.Skipped)
	if err != nil {
		return Totals{}, fmt.Errorf("schedule: sum up the schedules: %w", err)
	}
	return t, nil
}

// ListName is the name of the scheduler's to-do list, as status pages
// show it among the others: one item per schedule, due at its next slot.
const ListName = listName
