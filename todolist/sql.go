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
//   - claim is the token of the batch working the item (empty when idle) and
//     claimed_until the end of that batch's lease (0 when idle): a live
//     claim hides the item until then. A processor only deletes or updates
//     rows that still carry its token, which fences out processors whose
//     lease ran out. Neither column is indexed, so taking and dropping a
//     claim leaves every index alone (a HOT update on PostgreSQL, with the
//     free space that the table's fillfactor keeps on each page): the
//     claim, the one write every item pays besides its delete, stays cheap;
//   - readded is 1 when Add moved the item to a later due time since it was
//     last claimed. The re-add keeps the claim, so the item stays hidden
//     while the first processor still works it, and the flag tells that
//     processor the row is new work: it releases the row instead of
//     deleting it or recording its failure. Every claim clears the flag;
//   - parked is 0 or 1 (an integer on both engines, so the same SQL and
//     the same partial-index predicate serve both).
//
// Times are sqldb.EncodeTime values (Unix nanoseconds).
//
// Version 2 adds todolist_counters: each list's running totals of what
// processors did, one row per list that ever processed an item. The
// processes serving status (the ticker) do not run the processors, so the
// totals live in the database. Each batch adds its counts in one upsert,
// so concurrent processors sum without reading the totals first; the row
// outlives the list's items, so a list that finished all its work still
// reports. (Nothing has been released yet; version 2 spares the databases
// already at version 1 a rebuild.)
//
// Claims and Due walk the ready index in run_at order and stop after the
// batch, so a batch costs the same with 1,000 or 100,000 due. On
// PostgreSQL the fillfactor leaves half of each page free, so that the
// claim's new row version fits next to the old one (a HOT update): items
// due together were mostly added together and share pages, so a batch
// claims whole pages. Measured with BenchmarkProcess, 85 left most claims
// without room and the claim then cost twice as much.
var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE todolist_items (
	list          TEXT    NOT NULL,
	id            TEXT    NOT NULL,
	due           INTEGER NOT NULL,
	run_at        INTEGER NOT NULL,
	attempts      INTEGER NOT NULL DEFAULT 0,
	last_error    TEXT    NOT NULL DEFAULT '',
	parked        INTEGER NOT NULL DEFAULT 0,
	claim         TEXT    NOT NULL DEFAULT '',
	claimed_until INTEGER NOT NULL DEFAULT 0,
	readded       INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (list, id)
) WITHOUT ROWID;
` + indexes,
	Postgres: `CREATE TABLE todolist_items (
	list          TEXT    NOT NULL,
	id            TEXT    NOT NULL,
	due           BIGINT  NOT NULL,
	run_at        BIGINT  NOT NULL,
	attempts      INTEGER NOT NULL DEFAULT 0,
	last_error    TEXT    NOT NULL DEFAULT '',
	parked        INTEGER NOT NULL DEFAULT 0,
	claim         TEXT    NOT NULL DEFAULT '',
	claimed_until BIGINT  NOT NULL DEFAULT 0,
	readded       INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (list, id)
) WITH (fillfactor = 50);
` + indexes,
}, {
	Version: 2,
	SQLite: `CREATE TABLE todolist_counters (
	list      TEXT    NOT NULL PRIMARY KEY,
	completed INTEGER NOT NULL DEFAULT 0,
	failures  INTEGER NOT NULL DEFAULT 0,
	parkings  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;`,
	Postgres: `CREATE TABLE todolist_counters (
	list      TEXT   NOT NULL PRIMARY KEY,
	completed BIGINT NOT NULL DEFAULT 0,
	failures  BIGINT NOT NULL DEFAULT 0,
	parkings  BIGINT NOT NULL DEFAULT 0
);`,
}}

const indexes = `CREATE INDEX todolist_items_ready ON todolist_items (list, run_at) WHERE parked = 0;
CREATE INDEX todolist_items_parked ON todolist_items (list, due) WHERE parked = 1;`

const itemColumns = `id, due, run_at, attempts, last_error, parked, claim, claimed_until`

// ready is the condition for an item a processor may claim: the three
// placeholders are the list, the cutoff and the processor's now.
const ready = `list = ? AND parked = 0 AND run_at <= ? AND claimed_until <= ?`

// queries holds every statement of the package, rebound for one dialect.
// The dialects differ only in how a batch is claimed and how the done
// items of a batch are removed.
type queries struct {
	add, remove, get, due, parked, reactivate, stats, allStats string
	claim, fail, release, backlog, count                       string
	// removeDone deletes the done items of a batch on PostgreSQL by their
	// ctids, which travel as one array, and adds the batch's counts to the
	// list's totals; SQLite builds the delete per batch from the IDs.
	removeDone string
}

// The set-wise statements on a batch, completed by batchStatement with one
// placeholder per ID. A done item is deleted only if nothing re-added it
// meanwhile; releaseIDs then frees the claim of those that were, and of
// the items the budget left unstarted; releaseConflicts frees conflicting
// items until just past the cutoff, unless a re-add gave them a new due
// time.
const (
	removeDoneIDs    = `DELETE FROM todolist_items WHERE list = ? AND claim = ? AND readded = 0 AND id IN`
	releaseIDs       = `UPDATE todolist_items SET claim = '', claimed_until = 0 WHERE list = ? AND claim = ? AND id IN`
	releaseConflicts = `UPDATE todolist_items SET claim = '', claimed_until = 0,
	run_at = CASE WHEN readded = 0 THEN ? ELSE run_at END
WHERE list = ? AND claim = ? AND id IN`
)

// claimSQLite claims a batch: SQLite has one writer at a time, so the
// statement's own write lock keeps two processors from picking one row.
// Its placeholders are the list, cutoff, now, limit, token, lease end and
// the list again.
const claimSQLite = `WITH picked AS (
	SELECT id FROM todolist_items WHERE ` + ready + `
	ORDER BY run_at LIMIT ?)
UPDATE todolist_items SET claim = ?, claimed_until = ?, readded = 0
WHERE list = ? AND id IN (SELECT id FROM picked)
RETURNING id, due, attempts, last_error`

// claimPostgres removes the done items of the previous batch, adds that
// batch's counts to the list's totals and claims the next batch in one
// statement, one round trip per batch. SKIP LOCKED
// lets concurrent processors take disjoint batches instead of queueing
// behind each other's row locks.
//
// Rows are addressed by ctid, their physical place, which the claim
// returns: that spares a primary-key lookup per item in the claim and in
// the delete, the larger part of their cost with random keys. A locked row
// cannot move before the update, and a row claimed under a token keeps its
// place until it is deleted or changed; a row changed meanwhile is a new
// version elsewhere, which the delete does not see, and an unrelated row
// that later took the same place fails the token check (a re-added row
// that did so fails the readded check).
//
// A row that another transaction changed after the statement's snapshot
// is locked in its newest version, whose ctid the claiming UPDATE (reading
// the snapshot) cannot see: the claim then comes back short although the
// pick was full. The first row therefore reports the count picked, and the
// processor goes on while the pick is full; the row is taken by the next
// claim.
//
// Its placeholders are the list, the previous batch's token and the done
// rows' ctids (as text), the cutoff, now, the limit, the token, the lease
// end, and the previous batch's failures and parkings. The sub-statements share one snapshot, in which the rows
// being deleted are still visible: the claim skips them by their token.
// The first row, under an empty ID that no item has, carries the count of
// deleted items (as due) and of picked rows (as attempts); it comes first
// so that the delete runs before the pick.
var claimPostgres = `WITH done AS (` + deleteDonePostgres + ` RETURNING 1),
` + countDonePostgres("$9", "$10") + `,
picked AS (
	SELECT ctid FROM todolist_items
	WHERE list = $1 AND parked = 0 AND run_at <= $4 AND claimed_until <= $5 AND claim <> $2
	ORDER BY run_at LIMIT $6
	FOR UPDATE SKIP LOCKED),
claimed AS (
	UPDATE todolist_items SET claim = $7, claimed_until = $8, readded = 0
	WHERE ctid = ANY(ARRAY(SELECT ctid FROM picked)) AND list = $1
	RETURNING id, due, attempts, last_error, ctid::text AS ref)
SELECT '', (SELECT COUNT(*) FROM done), (SELECT COUNT(*) FROM picked)::integer, '', ''
UNION ALL SELECT id, due, attempts, last_error, ref FROM claimed`

// deleteDonePostgres deletes the done items of a batch: the list, the
// batch's token and the rows' ctids are $1, $2 and $3.
const deleteDonePostgres = `DELETE FROM todolist_items
	WHERE ctid = ANY($3::text[]::tid[]) AND list = $1 AND claim = $2 AND readded = 0`

// countDonePostgres is the sub-statement of a batch's delete that adds to
// the totals of list $1 the batch's successes (the $3 refs of its done
// items, whoever removed their rows) and the failures and parkings in the
// given placeholders. With nothing to count
// it writes nothing, so an idle tick takes no lock on the totals.
// PostgreSQL runs it to completion although no part of the statement
// reads it.
func countDonePostgres(failures, parkings string) string {
	return `counted AS (
	INSERT INTO todolist_counters (list, completed, failures, parkings)
	SELECT $1, n.completed, n.failures, n.parkings FROM (
		SELECT cardinality($3::text[]) AS completed,
			` + failures + `::bigint AS failures, ` + parkings + `::bigint AS parkings) AS n
	WHERE n.completed > 0 OR n.failures > 0 OR n.parkings > 0` + addCounts + `)`
}

// addCounts ends every write to todolist_counters: the counts are added to
// the stored totals inside the statement (an upsert takes the row's
// lock), so concurrent processors sum exactly without reading them first.
const addCounts = `
	ON CONFLICT (list) DO UPDATE SET
		completed = todolist_counters.completed + excluded.completed,
		failures = todolist_counters.failures + excluded.failures,
		parkings = todolist_counters.parkings + excluded.parkings`

func newQueries(db *sqlx.DB) queries {
	q := queries{
		// A replayed event brings the same due time and changes nothing;
		// only a later due time moves the item, and then it is new work
		// with a clean slate. A claim in flight is kept, so that no other
		// processor starts the item while the first still works it.
		add: `INSERT INTO todolist_items (list, id, due, run_at) VALUES (?, ?, ?, ?)
ON CONFLICT (list, id) DO UPDATE SET
	due = excluded.due, run_at = excluded.run_at,
	attempts = 0, last_error = '', parked = 0, readded = 1
WHERE excluded.due > todolist_items.due`,
		remove: `DELETE FROM todolist_items WHERE list = ? AND id = ?`,
		get:    `SELECT ` + itemColumns + ` FROM todolist_items WHERE list = ? AND id = ?`,
		due: `SELECT ` + itemColumns + ` FROM todolist_items
WHERE ` + ready + ` ORDER BY run_at, id LIMIT ?`,
		parked: `SELECT ` + itemColumns + ` FROM todolist_items
WHERE list = ? AND parked = 1 ORDER BY due, id LIMIT ?`,
		reactivate: `UPDATE todolist_items SET parked = 0, attempts = 0, last_error = '', claim = '', claimed_until = 0, run_at = due
WHERE list = ? AND id = ? AND parked = 1`,
		stats:    statsQuery(`WHERE list = ?`),
		allStats: statsQuery(``),
		claim:    claimSQLite,
		fail: `UPDATE todolist_items SET attempts = ?, last_error = ?, run_at = ?, parked = ?, claim = '', claimed_until = 0
WHERE list = ? AND id = ? AND claim = ? AND readded = 0`,
		release: `UPDATE todolist_items SET claim = '', claimed_until = 0 WHERE list = ? AND id = ? AND claim = ?`,
		backlog: `SELECT COUNT(*) FROM todolist_items WHERE ` + ready,
		// The list and a batch's completed items, failures and parkings.
		count: `INSERT INTO todolist_counters (list, completed, failures, parkings) VALUES (?, ?, ?, ?)` + addCounts,
	}
	for _, s := range []*string{&q.add, &q.remove, &q.get, &q.due, &q.parked, &q.reactivate, &q.stats, &q.allStats, &q.claim, &q.fail, &q.release, &q.backlog, &q.count} {
		*s = db.Rebind(*s)
	}
	if sqldb.DialectOf(db) == sqldb.Postgres {
		q.claim = claimPostgres
		// Its placeholders are those of the delete, then the batch's
		// failures and parkings; it returns the count of deleted items.
		q.removeDone = `WITH done AS (` + deleteDonePostgres + ` RETURNING 1),
` + countDonePostgres("$4", "$5") + `
SELECT COUNT(*) FROM done`
	}
	return q
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
