package schedule

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// A page of schedules for a dashboard: filtered, sorted and cut on the
// server, with each schedule's latest runs and the failed attempts at
// its next slot, in one statement, so that a page costs the same with a
// hundred schedules or a hundred thousand. The statement is the same on
// every database (LIMIT/OFFSET, correlated subqueries, LOWER … LIKE …
// ESCAPE), rebound to its placeholders.

// ErrInvalidPageQuery is returned by [ReadPage] for a query it cannot
// run (an unknown filter or sort, a limit out of range).
var ErrInvalidPageQuery = errors.New("schedule: read page: invalid query")

// PageFilter keeps part of the schedules in a [PageQuery].
type PageFilter string

const (
	// AllSchedules keeps every schedule.
	AllSchedules PageFilter = ""
	// Overdue keeps the schedules not paused whose next slot (plus its
	// jitter) is older than the query's Now minus its Grace: a slot that
	// should have fired and has not.
	Overdue PageFilter = "overdue"
	// Failing keeps the schedules whose next slot has failed attempts
	// (a handler error rolls the run back; the to-do item keeps the
	// count and the last error), parked ones among them.
	Failing PageFilter = "failing"
	// PausedOnly keeps the paused schedules.
	PausedOnly PageFilter = "paused"
)

// PageSort orders a [PageQuery]'s schedules; each order ends with the
// name, so pages never overlap.
type PageSort string

const (
	// ByName orders by name.
	ByName PageSort = "name"
	// ByNext orders by next slot, earliest (the most overdue) first;
	// schedules without one (paused, ended) last.
	ByNext PageSort = "next"
	// ByAttempts orders by failed attempts at the next slot, most first.
	ByAttempts PageSort = "attempts"
	// ByRuns orders by runs so far, most first.
	ByRuns PageSort = "runs"
)

// MaxPageRows bounds a [PageQuery]'s Limit, and MaxPageRuns its Runs.
const (
	MaxPageRows = 1000
	MaxPageRuns = 50
)

// PageQuery selects a page of schedules for [ReadPage].
type PageQuery struct {
	// Name keeps the schedule of that name alone ("" keeps all).
	Name string
	// Match keeps the schedules whose name contains it, ignoring case as
	// Unicode's simple lower-case mapping (strings.ToLower) does, letter by
	// letter ("" keeps all); % and _ are matched as themselves. On SQLite
	// that takes a handle opened by passage (sqldb, the binary), which
	// has passage_lower() (sqldb.ContainsFolded); on PostgreSQL a database
	// whose LC_CTYPE is UTF-8 (docs/postgres.md).
	Match string
	// Filter keeps part of them (AllSchedules by default).
	Filter PageFilter
	// Sort orders them (ByName when "").
	Sort PageSort
	// Offset skips that many; Limit returns at most that many, 1 to
	// MaxPageRows.
	Offset, Limit int
	// Runs is how many of each schedule's latest runs to read, 0 to
	// MaxPageRuns (MaxRunsRead when Name picks one schedule).
	Runs int
	// Now and Grace define Overdue: a next slot before Now-Grace.
	Now   time.Time
	Grace time.Duration
}

// PageRow is a schedule on a page: as [ReadSchedules] has it, with the
// state of its next slot's to-do item and its latest runs.
type PageRow struct {
	Stored
	// Attempts counts the failed attempts at the next slot, LastError
	// is the latest one's error, RetryAt when it is tried again; Parked
	// is true once the attempts ran out (the slot waits for a human).
	Attempts  int
	LastError string
	RetryAt   time.Time
	Parked    bool
	// Last are its latest runs, newest slot first (PageQuery.Runs).
	Last []RunRecord
}

// Page is what [ReadPage] returns.
type Page struct {
	Rows []PageRow
	// Total counts the schedules the query's Match and Filter keep, on
	// every page that has rows (a page past the end has neither).
	Total int
}

// pageRow is a row of the page's statement: a schedule, repeated once
// per run read (the run's columns empty when it has none).
type pageRow struct {
	Name      string `db:"name"`
	Spec      string `db:"spec"`
	Command   string `db:"command"`
	Paused    int    `db:"paused"`
	Runs      int64  `db:"runs"`
	Skipped   int64  `db:"skipped"`
	NextSlot  int64  `db:"next_slot"`
	Jitter    int64  `db:"jitter"`
	Overlap   string `db:"overlap"`
	MaxRuns   int    `db:"max_runs"`
	Until     int64  `db:"until"`
	CatchUp   string `db:"catch_up"`
	Attempts  int    `db:"attempts"`
	LastError string `db:"last_error"`
	Parked    int    `db:"item_parked"`
	RetryAt   int64  `db:"retry_at"`
	Total     int    `db:"total"`
	SortBy    int    `db:"sort_attempts"`
	Open      int    `db:"open_runs"`
	SlotID    string `db:"slot_id"`
	RunID     string `db:"run_id"`
	Slot      int64  `db:"slot"`
	FiredAt   int64  `db:"fired_at"`
	Attempt   int    `db:"attempt"`
	Manual    int    `db:"manual"`
	Finished  int    `db:"finished"`
}

// pageOrders are the page's orders, over the page's own columns (the
// same names in the inner and the outer query).
var pageOrders = map[PageSort]string{
	ByName:     `name`,
	ByNext:     `CASE WHEN next_slot = 0 THEN 1 ELSE 0 END, next_slot, name`,
	ByAttempts: `sort_attempts DESC, name`,
	ByRuns:     `runs DESC, name`,
}

// ReadPage returns the page of schedules q selects, without migrating:
// one statement, whatever the number of schedules. A database without
// the package's tables reads as holding none.
func ReadPage(ctx context.Context, db sqlx.ExtContext, q PageQuery) (Page, error) {
	sort := q.Sort
	if sort == "" {
		sort = ByName
	}
	order, ok := pageOrders[sort]
	switch {
	case !ok:
		return Page{}, fmt.Errorf("%w: sort %q: want name, next, attempts or runs", ErrInvalidPageQuery, q.Sort)
	case q.Limit < 1 || q.Limit > MaxPageRows:
		return Page{}, fmt.Errorf("%w: limit %d must be 1 to %d", ErrInvalidPageQuery, q.Limit, MaxPageRows)
	case q.Offset < 0:
		return Page{}, fmt.Errorf("%w: offset %d must not be negative", ErrInvalidPageQuery, q.Offset)
	case q.Runs < 0 || q.Runs > MaxPageRuns && (q.Name == "" || q.Runs > MaxRunsRead):
		return Page{}, fmt.Errorf("%w: runs %d must be 0 to %d (%d for one schedule)", ErrInvalidPageQuery, q.Runs, MaxPageRuns, MaxRunsRead)
	}
	where := []string{"1 = 1"}
	var filterArgs []any
	switch q.Filter {
	case AllSchedules:
	case Overdue:
		where = append(where, "s.paused = 0 AND s.next_slot <> 0 AND s.next_slot + s.jitter < ?")
		filterArgs = append(filterArgs, sqldb.EncodeTime(q.Now.Add(-q.Grace)))
	case Failing:
		where = append(where, "i.attempts > 0")
	case PausedOnly:
		where = append(where, "s.paused = 1")
	default:
		return Page{}, fmt.Errorf("%w: filter %q: want overdue, failing or paused", ErrInvalidPageQuery, q.Filter)
	}
	if q.Name != "" {
		where = append(where, `s.name = ?`)
		filterArgs = append(filterArgs, q.Name)
	}
	if q.Match != "" {
		cond, args := sqldb.ContainsFolded(sqldb.DialectOf(db), "s.name", q.Match)
		where = append(where, cond)
		filterArgs = append(filterArgs, args...)
	}
	tables, err := sqldb.Tables(ctx, db)
	if err != nil {
		return Page{}, fmt.Errorf("schedule: read page: %w", err)
	}
	if !tables["schedule_schedules"] || !tables["schedule_runs"] || !tables["todolist_items"] {
		return Page{}, nil // Open creates the three at once
	}
	// The inner select picks the page and counts what the filter keeps,
	// joining the to-do items only when the filter or the order needs
	// them (a join for every schedule skipped or counted cost as much as
	// the page); the outer one joins the page's schedules to their items
	// and to their latest runs: those from the Runs-th newest slot on
	// (the index on (schedule, slot) finds that slot), or none when Runs
	// is 0. Manual runs sharing a slot may add a row or two, cut below.
	from, sortAttempts := ` FROM schedule_schedules s`, `0`
	var fromArgs []any
	if q.Filter == Failing || sort == ByAttempts {
		from += ` LEFT JOIN todolist_items i ON i.list = ? AND i.id = s.name`
		fromArgs, sortAttempts = []any{listName}, `COALESCE(i.attempts, 0)`
	}
	from += ` WHERE ` + strings.Join(where, " AND ")
	fromArgs = append(fromArgs, filterArgs...)
	query := `SELECT p.*, COALESCE(i.attempts, 0) AS attempts, COALESCE(i.last_error, '') AS last_error,
	COALESCE(i.parked, 0) AS item_parked, COALESCE(i.run_at, 0) AS retry_at,
	(SELECT COUNT(*) FROM schedule_runs o WHERE o.schedule = p.name AND o.finished = 0) AS open_runs,
	COALESCE(r.slot_id, '') AS slot_id, COALESCE(r.run_id, '') AS run_id, COALESCE(r.slot, 0) AS slot,
	COALESCE(r.fired_at, 0) AS fired_at, COALESCE(r.attempt, 0) AS attempt, COALESCE(r.manual, 0) AS manual, COALESCE(r.finished, 0) AS finished
FROM (SELECT s.name, s.spec, s.command, s.paused, s.runs, s.skipped, s.next_slot, s.jitter, s.overlap, s.max_runs, s.until, s.catch_up,
	` + sortAttempts + ` AS sort_attempts, (SELECT COUNT(*)` + from + `) AS total` + from + `
	ORDER BY ` + order + ` LIMIT ? OFFSET ?) p
LEFT JOIN todolist_items i ON i.list = ? AND i.id = p.name
LEFT JOIN schedule_runs r ON ? > 0 AND r.schedule = p.name AND r.slot >= COALESCE(
	(SELECT x.slot FROM schedule_runs x WHERE x.schedule = p.name ORDER BY x.slot DESC LIMIT 1 OFFSET ?), ?)
ORDER BY ` + qualified(order, "p.") + `, r.slot DESC, r.fired_at DESC, r.run_id DESC`
	args := append(append(append([]any{}, fromArgs...), fromArgs...), q.Limit, q.Offset, listName, q.Runs, max(q.Runs-1, 0), int64(math.MinInt64))
	var rows []pageRow
	if err := sqlx.SelectContext(ctx, db, &rows, db.Rebind(query), args...); err != nil {
		return Page{}, fmt.Errorf("schedule: read page: %w", err)
	}
	var page Page
	for _, r := range rows {
		page.Total = r.Total
		if n := len(page.Rows); n == 0 || page.Rows[n-1].Name != r.Name {
			page.Rows = append(page.Rows, pageRowOf(r))
		}
		last := &page.Rows[len(page.Rows)-1]
		if r.RunID != "" && len(last.Last) < q.Runs {
			last.Last = append(last.Last, RunRecord{RunID: r.RunID, SlotID: r.SlotID, Schedule: r.Name,
				Slot: sqldb.DecodeTime(r.Slot).In(last.Zone), FiredAt: sqldb.DecodeTime(r.FiredAt).In(last.Zone),
				Attempt: r.Attempt, Manual: r.Manual != 0, Finished: r.Finished != 0})
		}
	}
	return page, nil
}

// qualified prefixes each column of an order with the page's alias.
func qualified(order, alias string) string {
	for _, col := range []string{"next_slot", "name", "sort_attempts", "runs"} {
		order = strings.ReplaceAll(order, col, alias+col)
	}
	return order
}

func pageRowOf(r pageRow) PageRow {
	s := Stored{Name: r.Name, Spec: r.Spec, Command: r.Command, Paused: r.Paused != 0, Runs: r.Runs, Skipped: r.Skipped,
		Jitter: time.Duration(r.Jitter), Overlap: parseOverlap(r.Overlap), Zone: zoneOf(r.Spec), MaxRuns: r.MaxRuns,
		CatchUp: r.CatchUp, Open: r.Open}
	if r.NextSlot != 0 {
		s.Next = sqldb.DecodeTime(r.NextSlot).In(s.Zone)
	}
	if r.Until != 0 {
		s.Until = sqldb.DecodeTime(r.Until).In(s.Zone)
	}
	row := PageRow{Stored: s, Attempts: r.Attempts, LastError: r.LastError, Parked: r.Parked != 0}
	if r.Attempts > 0 && r.RetryAt != 0 {
		row.RetryAt = sqldb.DecodeTime(r.RetryAt).In(s.Zone)
	}
	return row
}

// ReadOverdue counts the schedules [Overdue] keeps at now with grace,
// and returns the earliest of their due instants (next slot plus
// jitter; zero when none): what a summary needs, in one aggregate over
// the schedules, without sorting or joining them.
func ReadOverdue(ctx context.Context, db sqlx.ExtContext, now time.Time, grace time.Duration) (int, time.Time, error) {
	tables, err := sqldb.Tables(ctx, db)
	if err != nil || !tables["schedule_schedules"] {
		return 0, time.Time{}, wrapOverdue(err)
	}
	var row struct {
		N      int   `db:"n"`
		Oldest int64 `db:"oldest"`
	}
	err = sqlx.GetContext(ctx, db, &row, db.Rebind(`SELECT COUNT(*) AS n, COALESCE(MIN(next_slot + jitter), 0) AS oldest
FROM schedule_schedules WHERE paused = 0 AND next_slot <> 0 AND next_slot + jitter < ?`), sqldb.EncodeTime(now.Add(-grace)))
	if err != nil || row.N == 0 {
		return row.N, time.Time{}, wrapOverdue(err)
	}
	return row.N, sqldb.DecodeTime(row.Oldest), nil
}

func wrapOverdue(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("schedule: read overdue: %w", err)
}
