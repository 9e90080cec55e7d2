package todolist

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// The statements both databases run alike, and sqlDriver, the part of a
// driver both run alike with their own statements. Each database's own
// statements are in its driver's file (driver_sqlite.go,
// driver_postgres.go), the schema in schema.go.

// itemColumns are the columns an item is read with (see List.query).
const itemColumns = `id, due, run_at, attempts, last_error, parked, claim, claimed_until`

// addUpsert is what Add does on a conflict, shared by the bulk statements
// so that adding many items follows exactly the rules of adding one. A
// replayed event brings the same due time and changes nothing; only a
// later due time moves the item, and then it is new work with a clean
// slate. A claim in flight is kept, so that no other processor starts the
// item while the first still works it.
const addUpsert = `
ON CONFLICT (list, id) DO UPDATE SET
	due = excluded.due, run_at = excluded.run_at,
	attempts = 0, last_error = '', parked = 0, readded = 1
WHERE excluded.due > todolist_items.due`

// addCounts ends every write to todolist_counters: the counts are added to
// the stored totals inside the statement (an upsert takes the row's
// lock), so concurrent processors sum exactly without reading them first.
const addCounts = `
	ON CONFLICT (list) DO UPDATE SET
		completed = todolist_counters.completed + excluded.completed,
		failures = todolist_counters.failures + excluded.failures,
		parkings = todolist_counters.parkings + excluded.parkings`

// The shared statements, written with ? placeholders (rebound by
// newQueries where they are not run on SQLite alone).
const (
	addStatement    = `INSERT INTO todolist_items (list, id, due, run_at) VALUES (?, ?, ?, ?)` + addUpsert
	removeStatement = `DELETE FROM todolist_items WHERE list = ? AND id = ?`
	// countStatement adds to a list's totals: the list and a batch's
	// completed items, failures and parkings.
	countStatement = `INSERT INTO todolist_counters (list, completed, failures, parkings) VALUES (?, ?, ?, ?)` + addCounts
)

// queries holds the shared statements, rebound for one database.
type queries struct {
	add, remove, parked, reactivate, stats, allStats, count string
}

func newQueries(db *sqlx.DB) queries {
	return queries{
		add:    db.Rebind(addStatement),
		remove: db.Rebind(removeStatement),
		parked: db.Rebind(`SELECT ` + itemColumns + ` FROM todolist_items
WHERE list = ? AND parked = 1 ORDER BY due, id LIMIT ?`),
		reactivate: db.Rebind(`UPDATE todolist_items SET parked = 0, attempts = 0, last_error = '', claim = '', claimed_until = 0, run_at = due
WHERE list = ? AND id = ? AND parked = 1`),
		stats:    db.Rebind(statsQuery(`WHERE list = ?`)),
		allStats: db.Rebind(statsQuery(``)),
		count:    db.Rebind(countStatement),
	}
}

// totals is what one batch adds to its list's running totals.
type totals struct {
	list                          string
	completed, failures, parkings int
}

// countBatch adds t to its list's totals on ext with count,
// countStatement rebound for ext, unless it adds nothing.
func countBatch(ctx context.Context, ext sqlx.ExecerContext, count string, t totals) error {
	if t.completed == 0 && t.failures == 0 && t.parkings == 0 {
		return nil
	}
	_, err := ext.ExecContext(ctx, count, t.list, t.completed, t.failures, t.parkings)
	return err
}

// statsQuery reads, per list, its items aggregated and its totals, where
// selects the lists; it is applied to both tables, so a list appears if it
// has items, totals or both. Each list has at most one row on each side
// of the union and zeros on the other, so MAX picks the counted value.
// The placeholders are "now" twice, then those of where twice.
func statsQuery(where string) string {
	return `SELECT list, MAX(pending), MAX(due), MAX(parked), MIN(oldest), MAX(completed), MAX(failures), MAX(parkings)
FROM (
	SELECT list, ` + statsColumns + `, 0 AS completed, 0 AS failures, 0 AS parkings
	FROM todolist_items ` + where + ` GROUP BY list
	UNION ALL
	SELECT list, 0, 0, 0, NULL, completed, failures, parkings FROM todolist_counters ` + where + `
) AS s GROUP BY list ORDER BY list`
}

// statsColumns aggregates the items of one list; the two due-time
// placeholders are the same "now".
const statsColumns = `COUNT(*) - COALESCE(SUM(parked), 0) AS pending,
	COALESCE(SUM(CASE WHEN parked = 0 AND due <= ? THEN 1 ELSE 0 END), 0) AS due,
	COALESCE(SUM(parked), 0) AS parked,
	MIN(CASE WHEN parked = 0 AND due <= ? THEN due END) AS oldest`

// statements are one database's reads, which sqlDriver runs alike: get
// (list, ID), and due, backlog and the transactional pick (readyItems'
// placeholders), whose rows end with the row's version where versioned.
type statements struct {
	get, due, backlog, pickTx string
	versioned                 bool
}

// sqlDriver is the part of a driver that both databases run alike, with
// their own statements; each database's driver embeds it.
type sqlDriver struct {
	q statements
}

func (d sqlDriver) get(ctx context.Context, db *sqlx.DB, list, id string) (*sql.Rows, error) {
	return db.QueryContext(ctx, d.q.get, list, id)
}

func (d sqlDriver) due(ctx context.Context, db *sqlx.DB, r readyItems) (*sql.Rows, error) {
	return db.QueryContext(ctx, d.q.due, r.list, r.cutoff, r.now, r.limit)
}

func (d sqlDriver) backlog(ctx context.Context, db *sqlx.DB, r readyItems) (n int, err error) {
	err = db.GetContext(ctx, &n, d.q.backlog, r.list, r.cutoff, r.now)
	return n, err
}

func (d sqlDriver) pickTx(ctx context.Context, tx *sqlx.Tx, r readyItems) ([]claimed, error) {
	rows, err := tx.QueryContext(ctx, d.q.pickTx, r.list, r.cutoff, r.now, r.limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	batch := make([]claimed, 0, min(r.limit, batchPrealloc))
	for rows.Next() {
		var it claimed
		var due, version int64
		dest := []any{&it.ID, &due, &it.Attempts, &it.LastError}
		if d.q.versioned {
			dest = append(dest, &version)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		it.Due, it.version = sqldb.DecodeTime(due), uint32(version)
		batch = append(batch, it)
	}
	return batch, rows.Err()
}

// inChunks calls f with consecutive parts of n rows, [from, to), of at
// most size rows each, in order; on an error, failedAt is the from of the
// part that failed.
func inChunks(n, size int, f func(from, to int) error) (failedAt int, err error) {
	for from := 0; from < n; from += size {
		if err := f(from, min(from+size, n)); err != nil {
			return from, err
		}
	}
	return 0, nil
}

// batchPrealloc is the room a batch's slice starts with, growing past it
// as rows come: a tick usually finds a few items due, and a slice of the
// whole batch size (1,000 items, 115 KB) made at every tick was three
// quarters of what a tick of the order example allocated.
const batchPrealloc = 64

// rowsAffected returns the rows a statement changed, or err.
func rowsAffected(r sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// parkedFlag is it.Parked as stored.
func parkedFlag(it Item) int {
	if it.Parked {
		return 1
	}
	return 0
}

func idsOf(items []claimed) []string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}
