package todolist

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Inspection: read-only functions for status pages and dashboards. Unlike
// [Open] and [List.Stats] they never migrate, so they take no write lock
// and create nothing; a database without the package's tables reads as
// holding no lists. They read through an [sqlx.ExtContext], as every
// package's inspection does: a *sqlx.DB, or a *sqlx.Tx so that several
// reads share one transaction and show one consistent moment.

// inspectStatsQuery is the statistics query over every list: per list,
// its items aggregated and its totals; each list has at most one row on
// each side of the union, so MAX picks the counted value.
const inspectStatsQuery = `SELECT list, MAX(pending), MAX(due), MAX(parked), MIN(oldest), MAX(completed), MAX(failures), MAX(parkings)
FROM (
	SELECT list, COUNT(*) - COALESCE(SUM(parked), 0) AS pending,
		COALESCE(SUM(CASE WHEN parked = 0 AND due <= ? THEN 1 ELSE 0 END), 0) AS due,
		COALESCE(SUM(parked), 0) AS parked,
		MIN(CASE WHEN parked = 0 AND due <= ? THEN due END) AS oldest,
		0 AS completed, 0 AS failures, 0 AS parkings
	FROM todolist_items GROUP BY list
	UNION ALL
	SELECT list, 0, 0, 0, NULL, completed, failures, parkings FROM todolist_counters
) AS s GROUP BY list ORDER BY list`

// hasTables reports whether q sees the tables the inspection reads.
func hasTables(ctx context.Context, q sqldb.Queryer) (bool, error) {
	tables, err := sqldb.Tables(ctx, q)
	if err != nil {
		return false, err
	}
	return tables["todolist_items"] && tables["todolist_counters"], nil
}

// HasState reports whether the database q reads holds to-do lists:
// whether [Open] ever created the package's tables there, whatever they
// hold now.
func HasState(ctx context.Context, q sqlx.ExtContext) (bool, error) {
	ok, err := sqldb.HasTableWithPrefix(ctx, q, "todolist_")
	return ok, wrapRead("look for the to-do lists' tables", err)
}

// ReadStats returns the [Stats] of every list at now, by name: what
// [AllStats] returns, without migrating. It reads every item, so it is
// meant for status pages; [ReadListStats] reads one list.
func ReadStats(ctx context.Context, q sqlx.ExtContext, now time.Time) ([]ListStats, error) {
	if err := validateTime("now", now); err != nil {
		return nil, fmt.Errorf("todolist: read stats: %w", err)
	}
	ok, err := hasTables(ctx, q)
	if err != nil || !ok {
		return nil, wrapRead("read stats", err)
	}
	at := sqldb.EncodeTime(now)
	rows, err := q.QueryContext(ctx, q.Rebind(inspectStatsQuery), at, at)
	if err != nil {
		return nil, wrapRead("read stats", err)
	}
	defer rows.Close()
	var all []ListStats
	for rows.Next() {
		var ls ListStats
		var oldest sql.NullInt64
		if err := rows.Scan(&ls.Name, &ls.Pending, &ls.Due, &ls.Parked, &oldest, &ls.Completed, &ls.Failures, &ls.Parkings); err != nil {
			return nil, wrapRead("read stats", err)
		}
		ls.OldestDue = nullTime(oldest)
		all = append(all, ls)
	}
	return all, wrapRead("read stats", rows.Err())
}

// ReadListStats returns the [Stats] of one list at now, and whether the
// list exists: holds an item or has processed one. Each count is its own
// statement over the list's rows alone — pending and parked walk their
// indexes, due the list's items — so a list of millions costs what its
// own rows cost, whatever the other lists hold.
func ReadListStats(ctx context.Context, q sqlx.ExtContext, name string, now time.Time) (ListStats, bool, error) {
	if err := validateName(name); err != nil {
		return ListStats{}, false, err
	}
	if err := validateTime("now", now); err != nil {
		return ListStats{}, false, fmt.Errorf("todolist: read stats of %q: %w", name, err)
	}
	what := fmt.Sprintf("read stats of %q", name)
	ls := ListStats{Name: name}
	ok, err := hasTables(ctx, q)
	if err != nil || !ok {
		return ls, false, wrapRead(what, err)
	}
	at := sqldb.EncodeTime(now)
	var oldest sql.NullInt64
	var counters int
	err = errors.Join(
		sqlx.GetContext(ctx, q, &ls.Pending, q.Rebind(`SELECT COUNT(*) FROM todolist_items WHERE list = ? AND parked = 0`), name),
		sqlx.GetContext(ctx, q, &ls.Parked, q.Rebind(`SELECT COUNT(*) FROM todolist_items WHERE list = ? AND parked = 1`), name),
		q.QueryRowxContext(ctx, q.Rebind(`SELECT COUNT(*), MIN(due) FROM todolist_items WHERE list = ? AND parked = 0 AND due <= ?`), name, at).Scan(&ls.Due, &oldest),
		q.QueryRowxContext(ctx, q.Rebind(`SELECT COUNT(*), COALESCE(MAX(completed), 0), COALESCE(MAX(failures), 0), COALESCE(MAX(parkings), 0)
FROM todolist_counters WHERE list = ?`), name).Scan(&counters, &ls.Completed, &ls.Failures, &ls.Parkings),
	)
	if err != nil {
		return ls, false, wrapRead(what, err)
	}
	ls.OldestDue = nullTime(oldest)
	return ls, ls.Pending+ls.Parked > 0 || counters > 0, nil
}

// Cursor is a position in a list's items for keyset paging: the items
// after it in the page's order. The zero Cursor is the start.
type Cursor struct {
	// At is the instant the page is ordered by: the item's NextAttempt
	// for pending items, its Due for parked ones.
	At time.Time
	// ID breaks ties between items at the same instant.
	ID string
}

// IsZero reports whether c is the start.
func (c Cursor) IsZero() bool { return c.At.IsZero() && c.ID == "" }

// String encodes c for a URL: the instant in Unix nanoseconds, a dot and
// the ID in unpadded base64url, so any ID survives a query string.
func (c Cursor) String() string {
	if c.IsZero() {
		return ""
	}
	return strconv.FormatInt(sqldb.EncodeTime(c.At), 10) + "." + base64.RawURLEncoding.EncodeToString([]byte(c.ID))
}

// ParseCursor reads what [Cursor.String] wrote; "" is the start. Anything
// else fails with [ErrInvalidCursor].
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	at, id, ok := strings.Cut(s, ".")
	nanos, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return Cursor{}, fmt.Errorf("%w: %q: want <unix nanoseconds>.<base64url id>", ErrInvalidCursor, s)
	}
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w: %q: the id is not unpadded base64url", ErrInvalidCursor, s)
	}
	return Cursor{At: sqldb.DecodeTime(nanos), ID: string(raw)}, nil
}

// Page is one page of a list's items.
type Page struct {
	Items []Item
	// Next is the cursor of the following page, zero on the last one.
	Next Cursor
}

// MaxPageSize bounds the items [ReadItems] returns at once.
const MaxPageSize = 1000

// ReadItems returns up to limit items of a list after the cursor: the
// pending items ordered by (NextAttempt, ID) — the order processors claim
// them in, which is Due for every item that has not failed — or, with
// parked, the parked items by (Due, ID). Paging is by key, never by
// offset: each page walks the list's index from the cursor, so the
// millionth page costs what the first does. Claims are judged live or
// lapsed at now, as [List.Get] judges them: on SQLite from the item rows,
// on PostgreSQL from the live rows of todolist_claims that hold the page's
// items (one lookup per item of the page, over the list's live claims).
func ReadItems(ctx context.Context, q sqlx.ExtContext, list string, parked bool, after Cursor, limit int, now time.Time) (Page, error) {
	if err := validateName(list); err != nil {
		return Page{}, err
	}
	what := fmt.Sprintf("read items of %q", list)
	if limit <= 0 || limit > MaxPageSize {
		return Page{}, fmt.Errorf("todolist: %s: %w: %d, must be 1 to %d", what, ErrInvalidLimit, limit, MaxPageSize)
	}
	tables, err := sqldb.Tables(ctx, q)
	if err != nil || !tables["todolist_items"] || !tables["todolist_counters"] {
		return Page{}, wrapRead(what, err)
	}
	key, flag := "run_at", 0
	if parked {
		key, flag = "due", 1
	}
	at, id := int64(math.MinInt64), ""
	if !after.IsZero() {
		at, id = sqldb.EncodeTime(after.At), after.ID
	}
	// key >= cursor bounds the walk of the index (list, key) — whose
	// entries end with the primary key (list, id) on SQLite — so it starts
	// at the cursor; the OR only drops the cursor's own ties.
	query := `SELECT ` + itemColumns + ` FROM todolist_items
WHERE list = ? AND parked = ? AND ` + key + ` >= ? AND (` + key + ` > ? OR id > ?)
ORDER BY ` + key + `, id LIMIT ?`
	args := []any{list, flag, at, at, id, limit + 1}
	// The driver judges claims as List.Get does.
	query, more := newDriver(q).pageQuery(query, key, tables, list, sqldb.EncodeTime(now))
	args = append(args, more...)
	rows, err := q.QueryContext(ctx, q.Rebind(query), args...)
	if err != nil {
		return Page{}, wrapRead(what, err)
	}
	items, keys, err := scanItems(rows, now, parked)
	if err != nil {
		return Page{}, wrapRead(what, err)
	}
	var p Page
	if len(items) > limit {
		items = items[:limit]
		p.Next = Cursor{At: sqldb.DecodeTime(keys[limit-1]), ID: items[limit-1].ID}
	}
	p.Items = items
	return p, nil
}

// MaxDueBuckets bounds the buckets [ReadDueCounts] counts at once.
const MaxDueBuckets = 1000

// ReadDueCounts counts a list's pending items by when they may next be
// claimed (NextAttempt), in n buckets of width step from from on: bucket
// i counts [from + i·step, from + (i+1)·step). It walks the index on that
// instant over the range alone.
func ReadDueCounts(ctx context.Context, q sqlx.ExtContext, list string, from time.Time, step time.Duration, n int) ([]int, error) {
	if err := validateName(list); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("count due items of %q", list)
	if err := validateTime("from", from); err != nil {
		return nil, fmt.Errorf("todolist: %s: %w", what, err)
	}
	if step <= 0 || n <= 0 || n > MaxDueBuckets {
		return nil, fmt.Errorf("todolist: %s: %w: %d buckets of %s, want 1 to %d of a positive width", what, ErrInvalidLimit, n, step, MaxDueBuckets)
	}
	counts := make([]int, n)
	ok, err := hasTables(ctx, q)
	if err != nil || !ok {
		return counts, wrapRead(what, err)
	}
	start := sqldb.EncodeTime(from)
	width := step.Nanoseconds()
	rows, err := q.QueryContext(ctx, q.Rebind(`SELECT bucket, COUNT(*) FROM (
	SELECT (run_at - ?) / ? AS bucket FROM todolist_items
	WHERE list = ? AND parked = 0 AND run_at >= ? AND run_at < ?) AS b GROUP BY bucket`),
		start, width, list, start, start+width*int64(n))
	if err != nil {
		return nil, wrapRead(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var bucket int64
		var count int
		if err := rows.Scan(&bucket, &count); err != nil {
			return nil, wrapRead(what, err)
		}
		if bucket >= 0 && bucket < int64(n) {
			counts[bucket] = count
		}
	}
	return counts, wrapRead(what, rows.Err())
}

// wrapRead prefixes a read's error with what was read; nil stays nil.
func wrapRead(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("todolist: %s: %w", what, err)
}
