package todolist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// A page of lists for a dashboard: each list's counts (as [ReadStats]
// has them) and its items failing (as [ReadFailing] counts them),
// filtered, sorted and cut on the server with the number of lists the
// filter keeps, in one statement. The statement is the same on every
// database (a window COUNT, LIMIT/OFFSET, LOWER … LIKE … ESCAPE),
// rebound to its placeholders.

// ErrInvalidListPage is returned by [ReadListPage] for a query it cannot
// run (an unknown filter or sort, a limit or offset out of range).
var ErrInvalidListPage = errors.New("todolist: read list page: invalid query")

// ListFilter keeps part of the lists in a [ListPageQuery].
type ListFilter string

const (
	// AllLists keeps every list.
	AllLists ListFilter = ""
	// WithParked keeps the lists holding parked items.
	WithParked ListFilter = "parked"
	// WithFailing keeps the lists holding items failing: attempts above
	// zero, not parked.
	WithFailing ListFilter = "failing"
	// Behind keeps the lists whose oldest due item (not parked) has been
	// due for more than the query's Grace at its Now.
	Behind ListFilter = "behind"
)

// ListSort orders a [ListPageQuery]'s lists; each order ends with the
// name (byte order), so pages never overlap.
type ListSort string

const (
	// ListsByName orders by name.
	ListsByName ListSort = "name"
	// ByPending orders by pending items, most first.
	ByPending ListSort = "pending"
	// ByParked orders by parked items, most first.
	ByParked ListSort = "parked"
	// ByFailing orders by items failing, most first.
	ByFailing ListSort = "failing"
	// ByOldestDue orders by oldest due item, the oldest first; lists with
	// nothing due last.
	ByOldestDue ListSort = "oldest"
)

// MaxListPageRows bounds a [ListPageQuery]'s Limit.
const MaxListPageRows = 1000

// ListPageQuery selects a page of lists for [ReadListPage].
type ListPageQuery struct {
	// Match keeps the lists whose name contains it, ignoring case as
	// Unicode's simple lower-case mapping (strings.ToLower) does, letter by
	// letter ("" keeps all); % and _ are matched as themselves. On SQLite
	// that takes a handle opened by passage (sqldb, the binary), which
	// has passage_lower() (sqldb.ContainsFolded); on PostgreSQL a database
	// whose LC_CTYPE is UTF-8 (docs/postgres.md).
	Match string
	// Filter keeps part of them (AllLists by default).
	Filter ListFilter
	// Sort orders them (ListsByName when "").
	Sort ListSort
	// Offset skips that many; Limit returns at most that many, 1 to
	// MaxListPageRows.
	Offset, Limit int
	// Now is the instant the counts are taken at (what is due); Grace
	// defines Behind.
	Now   time.Time
	Grace time.Duration
}

// ListPageRow is a list on a page: its stats and its items failing.
type ListPageRow struct {
	ListStats
	// Failing counts its items whose action failed and that wait for
	// their next attempt.
	Failing int
}

// ListPage is what [ReadListPage] returns.
type ListPage struct {
	Rows []ListPageRow
	// Total counts the lists the query's Match and Filter keep, on every
	// page that has rows (a page past the end has neither).
	Total int
}

// listPageOrders are the page's orders, over the columns of the
// statement's aggregate.
var listPageOrders = map[ListSort]string{
	ListsByName: `name`,
	ByPending:   `pending DESC, name`,
	ByParked:    `parked DESC, name`,
	ByFailing:   `failing DESC, name`,
	ByOldestDue: `CASE WHEN oldest IS NULL THEN 1 ELSE 0 END, oldest, name`,
}

// listPageQuery aggregates every list as inspectStatsQuery does, with
// its items failing; the outer select filters, counts what it keeps
// (the window runs before LIMIT) and cuts the page. {match}, {filter}
// and {order} are filled in by ReadListPage.
const listPageQuery = `SELECT name, pending, due, parked, oldest, completed, failures, parkings, failing, COUNT(*) OVER () AS total
FROM (
	SELECT list AS name, MAX(pending) AS pending, MAX(due) AS due, MAX(parked) AS parked, MIN(oldest) AS oldest,
		MAX(completed) AS completed, MAX(failures) AS failures, MAX(parkings) AS parkings, MAX(failing) AS failing
	FROM (
		SELECT list, COUNT(*) - COALESCE(SUM(parked), 0) AS pending,
			COALESCE(SUM(CASE WHEN parked = 0 AND due <= ? THEN 1 ELSE 0 END), 0) AS due,
			COALESCE(SUM(parked), 0) AS parked,
			MIN(CASE WHEN parked = 0 AND due <= ? THEN due END) AS oldest,
			0 AS completed, 0 AS failures, 0 AS parkings,
			COALESCE(SUM(CASE WHEN attempts > 0 AND parked = 0 THEN 1 ELSE 0 END), 0) AS failing
		FROM todolist_items WHERE {match} GROUP BY list
		UNION ALL
		SELECT list, 0, 0, 0, NULL, completed, failures, parkings, 0 FROM todolist_counters WHERE {match}
	) AS s GROUP BY list
) AS l
WHERE {filter}
ORDER BY {order} LIMIT ? OFFSET ?`

// ReadListPage returns the page of lists q selects, without migrating:
// one statement, whatever the number of lists. A database without the
// package's tables reads as holding none.
func ReadListPage(ctx context.Context, db sqlx.ExtContext, q ListPageQuery) (ListPage, error) {
	sort := q.Sort
	if sort == "" {
		sort = ListsByName
	}
	order, ok := listPageOrders[sort]
	switch {
	case !ok:
		return ListPage{}, fmt.Errorf("%w: sort %q: want name, pending, parked, failing or oldest", ErrInvalidListPage, q.Sort)
	case q.Limit < 1 || q.Limit > MaxListPageRows:
		return ListPage{}, fmt.Errorf("%w: limit %d must be 1 to %d", ErrInvalidListPage, q.Limit, MaxListPageRows)
	case q.Offset < 0:
		return ListPage{}, fmt.Errorf("%w: offset %d must not be negative", ErrInvalidListPage, q.Offset)
	}
	if err := validateTime("now", q.Now); err != nil {
		return ListPage{}, fmt.Errorf("todolist: read list page: %w", err)
	}
	filter, filterArgs := "1 = 1", []any(nil)
	switch q.Filter {
	case AllLists:
	case WithParked:
		filter = "parked > 0"
	case WithFailing:
		filter = "failing > 0"
	case Behind:
		// Due for more than Grace is due before Now-Grace.
		filter, filterArgs = "oldest < ?", []any{sqldb.EncodeTime(q.Now.Add(-q.Grace))}
	default:
		return ListPage{}, fmt.Errorf("%w: filter %q: want parked, failing or behind", ErrInvalidListPage, q.Filter)
	}
	match, matchArgs := "1 = 1", []any(nil)
	if q.Match != "" {
		// substr would miss the case; LIKE with its wildcards escaped
		// matches the name's middle, on both databases.
		match, matchArgs = sqldb.ContainsFolded(sqldb.DialectOf(db), "list", q.Match)
	}
	ok, err := hasTables(ctx, db)
	if err != nil || !ok {
		return ListPage{}, wrapRead("read list page", err)
	}
	at := sqldb.EncodeTime(q.Now)
	query := strings.NewReplacer("{match}", match, "{filter}", filter, "{order}", order).Replace(listPageQuery)
	args := append([]any{at, at}, matchArgs...)
	args = append(append(append(args, matchArgs...), filterArgs...), q.Limit, q.Offset)
	rows, err := db.QueryContext(ctx, db.Rebind(query), args...)
	if err != nil {
		return ListPage{}, wrapRead("read list page", err)
	}
	defer rows.Close()
	var page ListPage
	for rows.Next() {
		var r ListPageRow
		var oldest sql.NullInt64
		if err := rows.Scan(&r.Name, &r.Pending, &r.Due, &r.Parked, &oldest, &r.Completed, &r.Failures, &r.Parkings, &r.Failing, &page.Total); err != nil {
			return ListPage{}, wrapRead("read list page", err)
		}
		r.OldestDue = nullTime(oldest)
		page.Rows = append(page.Rows, r)
	}
	return page, wrapRead("read list page", rows.Err())
}
