package todolist

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// NewItem is one item for [List.AddMany]: an ID and the time it falls due,
// the arguments of [List.Add].
type NewItem struct {
	// ID identifies the item within its list, e.g. an order ID.
	ID string
	// Due is the time the item falls due.
	Due time.Time
}

// The number of items one statement of AddMany writes. SQLite binds at
// most 32,766 parameters a statement and its statement takes two an item,
// PostgreSQL's takes three arrays whatever their length; both are kept
// well below their limit, because past a few thousand rows a bigger
// statement only costs more memory at once (measured in BenchmarkAddMany:
// the throughput is flat from 1,000 rows on SQLite, 5,000 on PostgreSQL).
const (
	addManyChunkSQLite   = 1000
	addManyChunkPostgres = 5000
)

// addUpsert is what add does on a conflict, shared by the bulk statements
// so that adding many items follows exactly the rules of adding one.
const addUpsert = `
ON CONFLICT (list, id) DO UPDATE SET
	due = excluded.due, run_at = excluded.run_at,
	attempts = 0, last_error = '', parked = 0, readded = 1
WHERE excluded.due > todolist_items.due`

// addManyPostgres upserts a chunk in one statement whatever its length:
// the list, then the IDs and their due times as two arrays, which
// PostgreSQL unnests row by row in array order.
const addManyPostgres = `INSERT INTO todolist_items (list, id, due, run_at)
SELECT $1, d.id, d.due, d.due FROM unnest($2::text[], $3::bigint[]) AS d(id, due)` + addUpsert

// addManySQLite returns the upsert of n items on SQLite, four parameters
// an item: the list, the ID and the due time twice (due and run_at).
// Plain ? parameters, not numbered ones reused (?1 for the list): SQLite
// looks a reused number up in a list, which made a statement of 10,000
// rows seven times slower than one of 1,000.
func addManySQLite(n int) string {
	const row = "(?, ?, ?, ?)"
	var b strings.Builder
	b.Grow(64 + (len(row)+2)*n + len(addUpsert))
	b.WriteString(`INSERT INTO todolist_items (list, id, due, run_at) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(addUpsert)
	return b.String()
}

// AddMany puts items on the list on the list's own database, in one
// transaction: all of them or, on an error, none. See [List.AddManyTx].
func (l *List) AddMany(ctx context.Context, items []NewItem) error {
	rows, err := l.prepareMany(items)
	if err != nil || len(rows.ids) == 0 {
		return err
	}
	if len(rows.ids) <= l.chunkSize() {
		// One statement is atomic on its own: no transaction's round
		// trips are needed.
		return l.execMany(ctx, l.db, rows)
	}
	tx, err := l.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("todolist: add %d items to %q: begin: %w", len(items), l.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := l.execMany(ctx, tx, rows); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("todolist: add %d items to %q: commit: %w", len(items), l.name, err)
	}
	return nil
}

// AddManyTx is [List.AddTx] for many items on ext, typically the caller's
// *sqlx.Tx (a rolled-back transaction leaves the list as it was). ext must
// belong to the list's database. Passed a *sqlx.DB, it is atomic only for
// up to one statement's worth of items (1,000 on SQLite, 5,000 on
// PostgreSQL); use [List.AddMany] instead.
//
// The result is the one of calling [List.AddTx] for each item in order —
// the rules are Add's: a new ID is added; the same or an earlier due time
// changes nothing; a later one moves the item and makes it new work. So an
// ID given more than once ends up due at the latest of its due times (or
// where it was, if that is later still). The items are written a
// statement per chunk rather than per item, which is what makes AddMany
// fast (see BenchmarkAddMany).
//
// Every item is checked before anything is written: an invalid ID or due
// time fails the whole call with [ErrInvalidID] or [ErrInvalidTime], the
// error naming the item's index in items and its ID. An empty items adds
// nothing.
//
// The items are written sorted by ID, so that two AddMany calls sharing
// IDs lock the rows in one order on PostgreSQL and cannot deadlock each
// other.
func (l *List) AddManyTx(ctx context.Context, ext sqlx.ExtContext, items []NewItem) error {
	if ext == nil {
		return fmt.Errorf("todolist: add %d items to %q: %w: ext must not be nil", len(items), l.name, ErrInvalidArgument)
	}
	rows, err := l.prepareMany(items)
	if err != nil || len(rows.ids) == 0 {
		return err
	}
	for _, id := range rows.ids {
		l.touch(ctx, id)
	}
	return l.execMany(ctx, ext, rows)
}

// manyRows is AddMany's items checked, encoded, without duplicates and
// sorted by ID.
type manyRows struct {
	ids  []string
	dues []int64
}

// prepareMany validates items and collapses each ID to its latest due
// time, which is what a sequence of Adds of that ID leaves: only a later
// due time moves an item. (A single statement must not touch one row
// twice anyway: PostgreSQL refuses it.)
func (l *List) prepareMany(items []NewItem) (manyRows, error) {
	// Sorted as (ID, encoded due) pairs rather than as NewItems: 24 bytes
	// to move a swap instead of 40, and one string comparison a step where
	// cmp.Compare makes two — the sort was a tenth of AddMany's time.
	type row struct {
		id  string
		due int64
	}
	sorted := make([]row, len(items))
	for i, it := range items {
		if err := validateID(it.ID); err != nil {
			return manyRows{}, fmt.Errorf("todolist: add %d items to %q: item %d: %w", len(items), l.name, i, err)
		}
		if err := validateTime("due time", it.Due); err != nil {
			return manyRows{}, fmt.Errorf("todolist: add %d items to %q: item %d (%q): %w", len(items), l.name, i, it.ID, err)
		}
		sorted[i] = row{it.ID, sqldb.EncodeTime(it.Due)}
	}
	slices.SortFunc(sorted, func(a, b row) int { return strings.Compare(a.id, b.id) })
	rows := manyRows{ids: make([]string, 0, len(sorted)), dues: make([]int64, 0, len(sorted))}
	for _, r := range sorted {
		if n := len(rows.ids); n > 0 && rows.ids[n-1] == r.id {
			rows.dues[n-1] = max(rows.dues[n-1], r.due)
			continue
		}
		rows.ids = append(rows.ids, r.id)
		rows.dues = append(rows.dues, r.due)
	}
	return rows, nil
}

func (l *List) chunkSize() int {
	if l.addChunk > 0 {
		return l.addChunk
	}
	if l.q.claimSets {
		return addManyChunkPostgres
	}
	return addManyChunkSQLite
}

// execMany writes rows a chunk at a time, in order.
func (l *List) execMany(ctx context.Context, ext sqlx.ExtContext, rows manyRows) error {
	size := l.chunkSize()
	if l.q.claimSets {
		for start := 0; start < len(rows.ids); start += size {
			end := min(start+size, len(rows.ids))
			if _, err := ext.ExecContext(ctx, addManyPostgres, l.name, rows.ids[start:end], rows.dues[start:end]); err != nil {
				return l.manyFailed(rows, start, end, err)
			}
		}
		return nil
	}
	// On SQLite the statement of a full chunk is parsed once and run for
	// every full chunk, when ext can prepare it: parsing 4,000
	// parameters is a good part of running them.
	exec := func(args ...any) error {
		_, err := ext.ExecContext(ctx, addManySQLite(len(args)/4), args...)
		return err
	}
	if p, ok := ext.(preparer); ok && len(rows.ids) >= 2*size {
		stmt, err := p.PrepareContext(ctx, addManySQLite(size))
		if err != nil {
			return fmt.Errorf("todolist: add %d items to %q: prepare: %w", len(rows.ids), l.name, err)
		}
		defer func() { _ = stmt.Close() }()
		exec = func(args ...any) error {
			if len(args) < 4*size {
				_, err := ext.ExecContext(ctx, addManySQLite(len(args)/4), args...)
				return err
			}
			_, err := stmt.ExecContext(ctx, args...)
			return err
		}
	}
	args := make([]any, 0, 4*min(size, len(rows.ids)))
	for start := 0; start < len(rows.ids); start += size {
		end := min(start+size, len(rows.ids))
		args = args[:0]
		for i := start; i < end; i++ {
			args = append(args, l.name, rows.ids[i], rows.dues[i], rows.dues[i])
		}
		if err := exec(args...); err != nil {
			return l.manyFailed(rows, start, end, err)
		}
	}
	return nil
}

// preparer is what *sqlx.Tx and *sqlx.DB offer besides sqlx.ExtContext.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func (l *List) manyFailed(rows manyRows, start, end int, err error) error {
	return fmt.Errorf("todolist: add %d items to %q: items %q to %q: %w", len(rows.ids), l.name, rows.ids[start], rows.ids[end-1], err)
}

// removeManyPostgres deletes the IDs in $2 from list $1 in one statement;
// removeCompletedManyPostgres does too and counts the rows it deleted
// completed, as removeCompleted does one.
const (
	removeManyPostgres          = `DELETE FROM todolist_items WHERE list = $1 AND id = ANY($2::text[])`
	removeCompletedManyPostgres = `WITH gone AS (
	DELETE FROM todolist_items WHERE list = $1 AND id = ANY($2::text[]) RETURNING 1)
INSERT INTO todolist_counters (list, completed, failures, parkings)
SELECT $1, COUNT(*), 0, 0 FROM gone HAVING COUNT(*) > 0` + addCounts
	// removeIDs is the SQLite delete, completed by batchStatement.
	removeIDs = `DELETE FROM todolist_items WHERE list = ? AND id IN`
)

// removeManyTx is [List.RemoveTx] for each of ids, in a statement or two
// rather than one per ID: those of the items ctx's action works are
// removed and counted completed together, the others removed. A
// [Projection] removes runs of items this way.
func (l *List) removeManyTx(ctx context.Context, ext sqlx.ExtContext, ids []string) error {
	if ext == nil {
		return fmt.Errorf("todolist: remove %d items from %q: %w: ext must not be nil", len(ids), l.name, ErrInvalidArgument)
	}
	if len(ids) == 1 {
		return l.RemoveTx(ctx, ext, ids[0])
	}
	var counted, plain []string
	for i, id := range ids {
		if err := validateID(id); err != nil {
			return fmt.Errorf("todolist: remove %d items from %q: item %d: %w", len(ids), l.name, i, err)
		}
		l.touch(ctx, id)
		if l.working(ctx, id) {
			counted = append(counted, id)
		} else {
			plain = append(plain, id)
		}
	}
	for start := 0; start < len(plain); start += MaxBatchSize {
		chunk := plain[start:min(start+MaxBatchSize, len(plain))]
		var err error
		if l.q.claimSets {
			_, err = ext.ExecContext(ctx, removeManyPostgres, l.name, chunk)
		} else {
			_, err = l.execIDs(ctx, ext, removeIDs, chunk, l.name)
		}
		if err != nil {
			return fmt.Errorf("todolist: remove %d items from %q: %w", len(chunk), l.name, err)
		}
	}
	for start := 0; start < len(counted); start += MaxBatchSize {
		chunk := counted[start:min(start+MaxBatchSize, len(counted))]
		if err := l.removeCompletedMany(ctx, ext, chunk); err != nil {
			return fmt.Errorf("todolist: remove %d items from %q and count them completed: %w", len(chunk), l.name, err)
		}
	}
	return nil
}

// removeCompletedMany is removeCompleted for many IDs.
func (l *List) removeCompletedMany(ctx context.Context, ext sqlx.ExtContext, ids []string) error {
	if l.q.claimSets {
		_, err := ext.ExecContext(ctx, removeCompletedManyPostgres, l.name, ids)
		return err
	}
	r, err := l.execIDs(ctx, ext, removeIDs, ids, l.name)
	n, err := rowsAffected(r, err)
	if err != nil || n == 0 {
		return err
	}
	_, err = ext.ExecContext(ctx, l.q.count, l.name, n, 0, 0)
	return err
}

// execIDs runs prefix followed by the list of ids, after args, on ext.
func (l *List) execIDs(ctx context.Context, ext sqlx.ExecerContext, prefix string, ids []string, args ...any) (sql.Result, error) {
	all := make([]any, 0, len(args)+len(ids))
	all = append(all, args...)
	for _, id := range ids {
		all = append(all, id)
	}
	return ext.ExecContext(ctx, batchStatement(l.db, prefix, len(ids)), all...)
}
