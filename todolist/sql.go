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
//     end of a backoff after a failure, or just past the cutoff of the tick
//     that hit a version conflict. Claims walk one index on run_at, so a
//     batch costs the same whatever the backlog;
//   - claim is the token of the batch working the item (” when idle) and
//     claimed_until the end of that batch's lease (0 when idle): a live
//     claim hides the item until then. A processor only deletes or updates
//     rows that still carry its token, which fences out processors whose
//     lease ran out and keeps re-adds made while the item was being worked.
//     Neither column is indexed, so taking and dropping a claim leaves every
//     index alone (a HOT update on PostgreSQL, with the free space that the
//     table's fillfactor keeps on each page): the claim, the one write every
//     item pays besides its delete, stays cheap;
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
	{
		Version: 4,
		// The lease moves out of run_at into a column of its own that no
		// index covers; rows claimed under version 3 keep their lease in
		// run_at and come back when it ends. The fillfactor leaves half
		// of each page free, so that the claim's new row version fits next
		// to the old one (a HOT update): items due together were mostly
		// added together and share pages, so a batch claims whole pages.
		// Measured with BenchmarkProcess, 85 left most claims without room
		// and the claim then cost twice as much.
		SQLite:   `ALTER TABLE todolist_items ADD COLUMN claimed_until INTEGER NOT NULL DEFAULT 0`,
		Postgres: `ALTER TABLE todolist_items ADD COLUMN claimed_until BIGINT NOT NULL DEFAULT 0, SET (fillfactor = 50)`,
	},
}

const itemColumns = `id, due, run_at, attempts, last_error, parked, claim, claimed_until`

// ready is the condition for an item a processor may claim: the three
// placeholders are the list, the cutoff and the processor's now.
const ready = `list = ? AND parked = 0 AND run_at <= ? AND claimed_until <= ?`

// queries holds every statement of the package, rebound for one dialect.
// The dialects differ only in how a batch is claimed and how the done
// items of a batch are removed.
type queries struct {
	add, remove, get, due, parked, reactivate, stats, allStats string
	claim, fail, backlog                                       string
	// removeDone deletes the done items of a batch on PostgreSQL by their
	// ctids, which travel as one array; SQLite builds the statement per
	// batch from the IDs.
	removeDone string
}

// claimSQLite claims a batch: SQLite has one writer at a time, so the
// statement's own write lock keeps two processors from picking one row.
// Its placeholders are the list, cutoff, now, limit, token, lease end and
// the list again.
const claimSQLite = `WITH picked AS (
	SELECT id FROM todolist_items WHERE ` + ready + `
	ORDER BY run_at LIMIT ?)
UPDATE todolist_items SET claim = ?, claimed_until = ?
WHERE list = ? AND id IN (SELECT id FROM picked)
RETURNING id, due, attempts, last_error`

// claimPostgres removes the done items of the previous batch and claims
// the next batch in one statement, one round trip per batch. SKIP LOCKED
// lets concurrent processors take disjoint batches instead of queueing
// behind each other's row locks.
//
// Rows are addressed by ctid, their physical place, which the claim
// returns: that spares a primary-key lookup per item in the claim and in
// the delete, the larger part of their cost with random keys. A locked row
// cannot move before the update, and a row claimed under a token keeps its
// place until it is deleted or changed; a row changed meanwhile (re-added,
// re-claimed) is a new version elsewhere that the token check leaves
// alone, and so is an unrelated row that later took the same place.
//
// Its placeholders are the list, the previous batch's token and the done
// rows' ctids (as text), the cutoff, now, the limit, the token and the
// lease end. The sub-statements share one snapshot, in which the rows
// being deleted are still visible: the claim skips them by their token.
// The last row counts the deleted items under the ID ”, which no item has.
const claimPostgres = `WITH done AS (
	DELETE FROM todolist_items
	WHERE ctid = ANY($3::text[]::tid[]) AND list = $1 AND claim = $2
	RETURNING 1),
picked AS (
	SELECT ctid FROM todolist_items
	WHERE list = $1 AND parked = 0 AND run_at <= $4 AND claimed_until <= $5 AND claim <> $2
	ORDER BY run_at LIMIT $6
	FOR UPDATE SKIP LOCKED),
claimed AS (
	UPDATE todolist_items SET claim = $7, claimed_until = $8
	WHERE ctid = ANY(ARRAY(SELECT ctid FROM picked)) AND list = $1
	RETURNING id, due, attempts, last_error, ctid::text AS ref)
SELECT id, due, attempts, last_error, ref FROM claimed
UNION ALL SELECT '', COUNT(*), 0, '', '' FROM done`

func newQueries(db *sqlx.DB) queries {
	q := queries{
		// A replayed event brings the same due time and changes nothing
		// (not even a claim in flight); only a later due time moves the
		// item, and then it is new work with a clean slate.
		add: `INSERT INTO todolist_items (list, id, due, run_at) VALUES (?, ?, ?, ?)
ON CONFLICT (list, id) DO UPDATE SET
	due = excluded.due, run_at = excluded.run_at,
	attempts = 0, last_error = '', parked = 0, claim = '', claimed_until = 0
WHERE excluded.due > todolist_items.due`,
		remove: `DELETE FROM todolist_items WHERE list = ? AND id = ?`,
		get:    `SELECT ` + itemColumns + ` FROM todolist_items WHERE list = ? AND id = ?`,
		due: `SELECT ` + itemColumns + ` FROM todolist_items
WHERE ` + ready + ` ORDER BY run_at, id LIMIT ?`,
		parked: `SELECT ` + itemColumns + ` FROM todolist_items
WHERE list = ? AND parked = 1 ORDER BY due, id LIMIT ?`,
		reactivate: `UPDATE todolist_items SET parked = 0, attempts = 0, last_error = '', claim = '', claimed_until = 0, run_at = due
WHERE list = ? AND id = ? AND parked = 1`,
		stats:    `SELECT ` + statsColumns + ` FROM todolist_items WHERE list = ?`,
		allStats: `SELECT list, ` + statsColumns + ` FROM todolist_items GROUP BY list ORDER BY list`,
		claim:    claimSQLite,
		fail: `UPDATE todolist_items SET attempts = ?, last_error = ?, run_at = ?, parked = ?, claim = '', claimed_until = 0
WHERE list = ? AND id = ? AND claim = ?`,
		backlog: `SELECT COUNT(*) FROM todolist_items WHERE ` + ready,
	}
	for _, s := range []*string{&q.add, &q.remove, &q.get, &q.due, &q.parked, &q.reactivate, &q.stats, &q.allStats, &q.claim, &q.fail, &q.backlog} {
		*s = db.Rebind(*s)
	}
	if sqldb.DialectOf(db) == sqldb.Postgres {
		q.claim = claimPostgres
		q.removeDone = `DELETE FROM todolist_items WHERE ctid = ANY($3::text[]::tid[]) AND list = $1 AND claim = $2`
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
