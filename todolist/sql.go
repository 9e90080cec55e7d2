package todolist

import (
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// component names this package's migrations in the shared bookkeeping table.
const component = "todolist"

// The schema: every list shares one table, keyed by (list, id).
//
//   - due is the item's own due time, set by Add;
//   - run_at is when the item may next be claimed: due at first, then the
//     end of a claim's lease while it is worked, or the end of a backoff
//     after a failure. Claims look only at run_at, so one index answers
//     "what is due now?" whatever state the items are in;
//   - claim is the token of the batch working the item (” when idle);
//     a processor only deletes or updates rows that still carry its token,
//     which fences out processors whose lease ran out and keeps re-adds
//     made while the item was being worked;
//   - parked is 0 or 1 (an integer on both engines, so the same SQL and
//     the same partial-index predicate serve both).
//
// Times are sqldb.EncodeTime values (Unix nanoseconds).
var migrations = []sqldb.Migration{
	{
		Version: 1,
		SQLite: `CREATE TABLE todolist_items (
	list       TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	due        INTEGER NOT NULL,
	run_at     INTEGER NOT NULL,
	attempts   INTEGER NOT NULL DEFAULT 0,
	last_error TEXT    NOT NULL DEFAULT '',
	parked     INTEGER NOT NULL DEFAULT 0,
	claim      TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (list, id)
) WITHOUT ROWID`,
		Postgres: `CREATE TABLE todolist_items (
	list       TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	due        BIGINT  NOT NULL,
	run_at     BIGINT  NOT NULL,
	attempts   INTEGER NOT NULL DEFAULT 0,
	last_error TEXT    NOT NULL DEFAULT '',
	parked     INTEGER NOT NULL DEFAULT 0,
	claim      TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (list, id)
)`,
	},
	{
		Version: 2,
		// Claims and Due walk this index in run_at order and stop after
		// the batch, so a batch costs the same with 1,000 or 100,000 due.
		SQLite: `CREATE INDEX todolist_items_ready ON todolist_items (list, run_at) WHERE parked = 0`,
	},
	{
		Version: 3,
		SQLite:  `CREATE INDEX todolist_items_parked ON todolist_items (list, due) WHERE parked = 1`,
	},
}

const itemColumns = `id, due, run_at, attempts, last_error, parked, claim`

// queries holds every statement of the package, rebound for one dialect.
// The only dialect difference is how a batch is claimed.
type queries struct {
	add, remove, get, due, parked, reactivate, stats, allStats string
	claim, fail, backlog                                       string
}

// claimSQLite claims a batch: SQLite has one writer at a time, so the
// statement's own write lock keeps two processors from picking one row.
const claimSQLite = `WITH picked AS (
	SELECT id FROM todolist_items
	WHERE list = ? AND parked = 0 AND run_at <= ?
	ORDER BY run_at LIMIT ?)
UPDATE todolist_items SET claim = ?, run_at = ?
WHERE list = ? AND id IN (SELECT id FROM picked)
RETURNING id, due, attempts, last_error`

// claimPostgres claims a batch: SKIP LOCKED lets concurrent processors take
// disjoint batches instead of queueing behind each other's row locks.
const claimPostgres = `WITH picked AS (
	SELECT id FROM todolist_items
	WHERE list = ? AND parked = 0 AND run_at <= ?
	ORDER BY run_at LIMIT ?
	FOR UPDATE SKIP LOCKED)
UPDATE todolist_items AS t SET claim = ?, run_at = ?
FROM picked WHERE t.list = ? AND t.id = picked.id
RETURNING t.id, t.due, t.attempts, t.last_error`

func newQueries(db *sqlx.DB) queries {
	claim := claimSQLite
	if sqldb.DialectOf(db) == sqldb.Postgres {
		claim = claimPostgres
	}
	q := queries{
		// A replayed event brings the same due time and changes nothing
		// (not even a claim in flight); only a later due time moves the
		// item, and then it is new work with a clean slate.
		add: `INSERT INTO todolist_items (list, id, due, run_at) VALUES (?, ?, ?, ?)
ON CONFLICT (list, id) DO UPDATE SET
	due = excluded.due, run_at = excluded.run_at,
	attempts = 0, last_error = '', parked = 0, claim = ''
WHERE excluded.due > todolist_items.due`,
		remove: `DELETE FROM todolist_items WHERE list = ? AND id = ?`,
		get:    `SELECT ` + itemColumns + ` FROM todolist_items WHERE list = ? AND id = ?`,
		due: `SELECT ` + itemColumns + ` FROM todolist_items
WHERE list = ? AND parked = 0 AND run_at <= ? ORDER BY run_at, id LIMIT ?`,
		parked: `SELECT ` + itemColumns + ` FROM todolist_items
WHERE list = ? AND parked = 1 ORDER BY due, id LIMIT ?`,
		reactivate: `UPDATE todolist_items SET parked = 0, attempts = 0, last_error = '', claim = '', run_at = due
WHERE list = ? AND id = ? AND parked = 1`,
		stats:    `SELECT ` + statsColumns + ` FROM todolist_items WHERE list = ?`,
		allStats: `SELECT list, ` + statsColumns + ` FROM todolist_items GROUP BY list ORDER BY list`,
		claim:    claim,
		fail: `UPDATE todolist_items SET attempts = ?, last_error = ?, run_at = ?, parked = ?, claim = ''
WHERE list = ? AND id = ? AND claim = ?`,
		backlog: `SELECT COUNT(*) FROM todolist_items WHERE list = ? AND parked = 0 AND run_at <= ?`,
	}
	for _, s := range []*string{&q.add, &q.remove, &q.get, &q.due, &q.parked, &q.reactivate, &q.stats, &q.allStats, &q.claim, &q.fail, &q.backlog} {
		*s = db.Rebind(*s)
	}
	return q
}

// statsColumns aggregates one list; the two due-time placeholders are the
// same "now".
const statsColumns = `COUNT(*) - COALESCE(SUM(parked), 0),
	COALESCE(SUM(CASE WHEN parked = 0 AND due <= ? THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(parked), 0),
	MIN(CASE WHEN parked = 0 AND due <= ? THEN due END)`

// batchStatement returns prefix followed by "(?, ?, …)" with n
// placeholders, rebound for db: the set-wise delete and release of a batch.
func batchStatement(db *sqlx.DB, prefix string, n int) string {
	var b strings.Builder
	b.Grow(len(prefix) + 3*n + 2)
	b.WriteString(prefix)
	b.WriteString(" (")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('?')
	}
	b.WriteByte(')')
	return db.Rebind(b.String())
}
