package todolist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Stats counts the items of one list at an instant, and what processors
// did with the list's items so far.
//
// The totals (Completed, Failures, Parkings) are kept in the database and
// added to by every processor of the list, in whichever process it runs;
// so a process that runs no processor (a status page) reads them too.
// They only grow: removing or re-activating items leaves them alone. Both
// engines count by the same rule, so they agree (see the package
// documentation, Totals): an item is completed by the deletion of its row
// because it was worked successfully, in the deletion's own transaction —
// its action's removal of it, or its processor's once the batch ends. A
// processor that dies, or loses its database, in the middle of a batch
// leaves out only what it had not written: the successes whose items are
// still on the list (worked and counted again by another processor), and
// the failures and parkings of that batch (the items themselves keep
// them). A processor that is cancelled writes what its batch did before it
// stops.
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

	// Completed is the total of items completed: removed from the list
	// because they were worked successfully, each counted once, in the
	// transaction that removed it. That is either the removal an action
	// made of its own item under the ctx its processor gave it (see
	// [List.RemoveTx]) — the usual case when the action appends events a
	// projection of this list applies — or, for an action that returned
	// nil ([Result.Done]) and left its item on the list, the processor's
	// removal at the end of the batch, while its lease holds. A success
	// that finds its item already removed counts nothing more: a late one
	// after a lost lease is in [Result.Lost], and the processor that took
	// the item over counts it.
	Completed int64
	// Failures is the total of failed attempts recorded, including those
	// that parked an item ([Result.Failed] plus [Result.Parked]). Version
	// conflicts are not failures.
	Failures int64
	// Parkings is the total of times an item was parked; Parked is how
	// many are parked now.
	Parkings int64
}

// ListStats is the [Stats] of one named list.
type ListStats struct {
	// Name is the list's name, as given to [Open].
	Name string
	Stats
}

// Stats counts the list's items at now and reads its totals. It reads
// every item of the list, so it is meant for status pages, not for every
// tick.
func (l *List) Stats(ctx context.Context, now time.Time) (Stats, error) {
	if err := validateTime("now", now); err != nil {
		return Stats{}, fmt.Errorf("todolist: stats of %q: %w", l.name, err)
	}
	at := sqldb.EncodeTime(now)
	s, err := scanStats(l.db.QueryRowContext(ctx, l.q.stats, at, at, l.name, l.name))
	if errors.Is(err, sql.ErrNoRows) {
		// Neither items nor totals: a list never used.
		return Stats{}, nil
	}
	if err != nil {
		return Stats{}, fmt.Errorf("todolist: stats of %q: %w", l.name, err)
	}
	return s.Stats, nil
}

// AllStats counts the items of every list in db at now and reads their
// totals, ordered by list name. A list appears if it has items or if a
// processor ever recorded an outcome for it, so a list whose items are all
// done still reports its totals; a list that only ever had items removed
// by hand does not. It creates the tables if no list was ever opened in
// db, so a fresh database reports no lists instead of failing.
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
		ls, err := scanStats(rows)
		if err != nil {
			return nil, fmt.Errorf("todolist: stats of all lists: %w", err)
		}
		all = append(all, ls)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("todolist: stats of all lists: %w", err)
	}
	return all, nil
}

// scanStats reads one row of the stats query.
func scanStats(row interface{ Scan(dest ...any) error }) (ListStats, error) {
	var ls ListStats
	var oldest sql.NullInt64
	if err := row.Scan(&ls.Name, &ls.Pending, &ls.Due, &ls.Parked, &oldest, &ls.Completed, &ls.Failures, &ls.Parkings); err != nil {
		return ListStats{}, err
	}
	ls.OldestDue = nullTime(oldest)
	return ls, nil
}
