package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Inspection: read-only functions for status pages and dashboards. Unlike
// [Open] they never migrate, so they take no write lock and create
// nothing; a database without the package's tables reads as holding no
// schedules. They read through a sqlx.ExtContext: a *sqlx.DB, or a
// *sqlx.Tx, so that several reads share one consistent snapshot.

// Stored is a stored schedule, as [Scheduler.List] and [ReadSchedules]
// report it.
type Stored struct {
	Name    string
	Spec    string
	Command string
	Paused  bool
	// Runs counts the runs of its plan; Skipped the slots a catch-up
	// policy did not fire.
	Runs, Skipped int64
	// Next is its next slot, shown in Zone; zero when paused or ended.
	Next time.Time
	// Jitter and Overlap are its definition's.
	Jitter  time.Duration
	Overlap Overlap
	// Zone is the zone the spec's slots fall in (a cron's CRON_TZ, a
	// rule's TZID, an interval's anchor), UTC when the stored text does not
	// read back.
	Zone *time.Location
	// MaxRuns and Until end the schedule (zero: no end).
	MaxRuns int
	Until   time.Time
	// CatchUp names the policy for missed slots.
	CatchUp string
	// Open counts the runs started and not finished (see ErrStillRunning).
	Open int
}

// HasState reports whether the database q reads holds schedules: whether
// [Open] ever created the package's tables there, even if every schedule
// was deleted since. A command that must not create them (a mistyped
// database would be left with new tables) asks it before calling Open.
func HasState(ctx context.Context, q sqlx.ExtContext) (bool, error) {
	ok, err := sqldb.HasTableWithPrefix(ctx, q, "schedule_")
	if err != nil {
		return false, fmt.Errorf("schedule: look for the schedules' tables: %w", err)
	}
	return ok, nil
}

// Count returns how many schedules are stored, paused and ended ones
// included: none in a database without the package's tables.
func Count(ctx context.Context, q sqlx.ExtContext) (int, error) {
	ok, err := HasState(ctx, q)
	if err != nil || !ok {
		return 0, err
	}
	n, err := newDriver(q).countSchedules(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("schedule: count schedules: %w", err)
	}
	return n, nil
}

// ReadSchedules returns every stored schedule, by name, without
// migrating.
func ReadSchedules(ctx context.Context, q sqlx.ExtContext) ([]Stored, error) {
	tables, err := sqldb.Tables(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("schedule: read schedules: %w", err)
	}
	if !tables["schedule_schedules"] || !tables["schedule_runs"] {
		return nil, nil
	}
	out, err := listSchedules(ctx, newDriver(q), q)
	if err != nil {
		return nil, fmt.Errorf("schedule: read schedules: %w", err)
	}
	return out, nil
}

// listSchedules reads every stored schedule, by name, through d.
func listSchedules(ctx context.Context, d driver, q sqlx.ExtContext) ([]Stored, error) {
	rows, err := d.schedules(ctx, q)
	if err != nil {
		return nil, err
	}
	openBy, err := d.openRuns(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]Stored, len(rows))
	for i, r := range rows {
		s := Stored{
			Name: r.Name, Spec: r.Spec, Command: r.Command, Paused: r.Paused != 0, Runs: r.Runs, Skipped: r.Skipped,
			Jitter: time.Duration(r.Jitter), Overlap: parseOverlap(r.Overlap),
			Zone: zoneOf(r.Spec), MaxRuns: r.MaxRuns, CatchUp: r.CatchUp, Open: openBy[r.Name],
		}
		if r.NextSlot != 0 {
			s.Next = sqldb.DecodeTime(r.NextSlot).In(s.Zone)
		}
		if r.Until != 0 {
			s.Until = sqldb.DecodeTime(r.Until).In(s.Zone)
		}
		out[i] = s
	}
	return out, nil
}

// zoneOf is the zone a stored spec's slots are in: the location of the
// slots it yields, which every spec gives in its own zone.
func zoneOf(text string) *time.Location {
	spec, err := Parse(text, nil)
	if err != nil {
		return time.UTC
	}
	// Any instant will do; a spec that has ended yields none.
	if next := spec.Next(time.Unix(0, 0)); !next.IsZero() {
		return next.Location()
	}
	return time.UTC
}

// MaxRunsRead bounds the runs [ReadRuns] returns at once.
const MaxRunsRead = 1000

// ReadRuns returns the latest runs of a schedule, newest slot first, at
// most limit; a schedule without runs, or unknown, has none.
func ReadRuns(ctx context.Context, q sqlx.ExtContext, name string, limit int) ([]RunRecord, error) {
	if limit <= 0 || limit > MaxRunsRead {
		return nil, fmt.Errorf("schedule: read runs of %q: limit %d must be 1 to %d", name, limit, MaxRunsRead)
	}
	tables, err := sqldb.Tables(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("schedule: read runs of %q: %w", name, err)
	}
	if !tables["schedule_runs"] {
		return nil, nil
	}
	runs, err := newDriver(q).runsOf(ctx, q, name, limit)
	if err != nil {
		return nil, fmt.Errorf("schedule: read runs of %q: %w", name, err)
	}
	return runs, nil
}
