package todolist

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Stats counts the items of one list at an instant.
type Stats struct {
	// Pending counts the items that are not parked, whether due or not.
	Pending int
	// Due counts the pending items whose due time has come: waiting for a
	// tick, being worked, or backing off after a failure.
	Due int
	// Parked counts the items that failed too often and wait for
	// [List.Reactivate].
	Parked int
	// OldestDue is the earliest due time among the Due items, or the zero
	// time when none is due: how far behind the processor is.
	OldestDue time.Time
}

// ListStats is the [Stats] of one named list.
type ListStats struct {
	// Name is the list's name, as given to [Open].
	Name string
	Stats
}

// Stats counts the list's items at now. It reads every item of the list, so
// it is meant for status pages, not for every tick.
func (l *List) Stats(ctx context.Context, now time.Time) (Stats, error) {
	if err := validateTime("now", now); err != nil {
		return Stats{}, fmt.Errorf("todolist: stats of %q: %w", l.name, err)
	}
	at := sqldb.EncodeTime(now)
	var s Stats
	var oldest sql.NullInt64
	row := l.db.QueryRowContext(ctx, l.q.stats, at, at, l.name)
	if err := row.Scan(&s.Pending, &s.Due, &s.Parked, &oldest); err != nil {
		return Stats{}, fmt.Errorf("todolist: stats of %q: %w", l.name, err)
	}
	s.OldestDue = nullTime(oldest)
	return s, nil
}

// AllStats counts the items of every list in db at now, ordered by list
// name; lists without items do not appear. It creates the table if no list
// was ever opened in db, so a fresh database reports no lists instead of
// failing.
func AllStats(ctx context.Context, db *sqlx.DB, now time.Time) ([]ListStats, error) {
	if db == nil {
		return nil, fmt.Errorf("todolist: stats of all lists: %w: db must not be nil", ErrInvalidArgument)
	}
	if err := validateTime("now", now); err != nil {
		return nil, fmt.Errorf("todolist: stats of all lists: %w", err)
	}
	if err := sqldb.Migrate(ctx, db, component, migrations); err != nil {
		return nil, fmt.Errorf("todolist: stats of all lists: %w", err)
	}
	at := sqldb.EncodeTime(now)
	rows, err := db.QueryContext(ctx, newQueries(db).allStats, at, at)
	if err != nil {
		return nil, fmt.Errorf("todolist: stats of all lists: %w", err)
	}
	defer rows.Close()
	var all []ListStats
	for rows.Next() {
		var ls ListStats
		var oldest sql.NullInt64
		if err := rows.Scan(&ls.Name, &ls.Pending, &ls.Due, &ls.Parked, &oldest); err != nil {
			return nil, fmt.Errorf("todolist: stats of all lists: %w", err)
		}
		ls.OldestDue = nullTime(oldest)
		all = append(all, ls)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("todolist: stats of all lists: %w", err)
	}
	return all, nil
}
