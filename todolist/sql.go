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
//   - claim and claimed_until hold a claim on SQLite (see below); on
//     PostgreSQL they stay empty;
//   - readded is 1 when Add moved the item to a later due time since it was
//     last claimed (read and cleared on SQLite only). The re-add keeps the claim, so the item stays
//     hidden while the first processor still works it, and the flag tells
//     that processor the row is new work: it releases the row instead of
//     deleting it or recording its failure. Every claim clears the flag;
//   - parked is 0 or 1 (an integer on both engines, so the same SQL and
//     the same partial-index predicate serve both).
//
// Times are sqldb.EncodeTime values (Unix nanoseconds).
//
// How a claim is held differs, because the engines differ in how writers
// meet:
//
//   - SQLite has one writer at a time, so a claim is written on the rows:
//     claim is the token of the batch working the item and claimed_until
//     the end of its lease. A processor only deletes or updates rows that
//     still carry its token, which fences out processors whose lease ran
//     out.
//   - PostgreSQL lets processors write at once, and a write on every
//     claimed row (a lease, or a FOR UPDATE lock) would double the cost of
//     a batch whose only other write is the delete. A batch is held instead
//     by one row of todolist_claims (version 3): its token, its lease end
//     and the IDs it holds. Claimers of one list take turns on a
//     transaction-scoped advisory lock, so each one's pick sees every live
//     claim and skips its IDs; the lock is held for the pick alone, never
//     while actions run, so an action's own transaction may remove or
//     re-add its item. A processor writes the outcome of its items only
//     while its claim row exists: the settle that deletes the row, or a
//     lock on it, fences out a processor whose lease ran out (lapsed rows
//     are dropped by the next claimer). Rows are addressed by the ctid
//     the pick returned, their physical place, together with the ID and
//     the row version (xmin): that spares a primary-key lookup per item,
//     and a row that a re-add changed meanwhile is a new version, so it is
//     kept as new work. Claims run under read committed, where each
//     statement of the claim function sees what committed before it.
//
// Either way a lease is renewed every third of it while the batch's
// actions run (lease.go): on SQLite claimed_until of the rows still
// carrying the token, on PostgreSQL the claim row's until, each only if
// the lease has not ended. A failed item leaves the claim at once (its
// claim cleared, or its ID taken out of the claim row), so that it comes
// back at its backoff time while the batch still runs. Every write of an
// outcome requires the lease unlapsed at the processor's now.
//
// Version 2 adds todolist_counters: each list's running totals of what
// processors did, one row per list that ever processed an item. The
// processes serving status (the ticker) do not run the processors, so the
// totals live in the database. Each batch adds its counts in one upsert,
// so concurrent processors sum without reading the totals first; the row
// outlives the list's items, so a list that finished all its work still
// reports. (Nothing has been released yet; versions 2 and 3 spare the
// databases already migrated a rebuild.)
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
);
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
}, {
	// PostgreSQL's claims; SQLite keeps its claims on the rows. A batch's
	// IDs are stored out of line uncompressed: random keys barely
	// compress, and trying cost a millisecond per batch of 1,000.
	Version: 3,
	Postgres: `CREATE TABLE todolist_claims (
	token TEXT   NOT NULL PRIMARY KEY,
	list  TEXT   NOT NULL,
	until BIGINT NOT NULL,
	ids   TEXT[] NOT NULL
);
ALTER TABLE todolist_claims ALTER COLUMN ids SET STORAGE EXTERNAL;
CREATE INDEX todolist_claims_list ON todolist_claims (list, until);
` + claimFunction,
}}

const indexes = `CREATE INDEX todolist_items_ready ON todolist_items (list, run_at) WHERE parked = 0;
CREATE INDEX todolist_items_parked ON todolist_items (list, due) WHERE parked = 1;`

const itemColumns = `id, due, run_at, attempts, last_error, parked, claim, claimed_until`

// ready is the condition for an item a processor may claim: the three
// placeholders are the list, the cutoff and the processor's now.
const ready = `list = ? AND parked = 0 AND run_at <= ? AND claimed_until <= ?`

// queries holds every statement of the package, rebound for one dialect.
// The dialects differ in how a batch is claimed and how its outcome is
// written (see the schema).
type queries struct {
	add, remove, get, due, parked, reactivate, stats, allStats string
	claim, fail, backlog, count                                string
	// claimSets is true on PostgreSQL, where a claim is a row of
	// todolist_claims; the statements below are PostgreSQL's alone.
	claimSets bool
	// settle deletes a batch's claim row and its done items, and adds the
	// batch's counts to the list's totals; settleKeep does the same but
	// leaves the claim row to lapse. Both return the count deleted.
	settle, settleKeep string
	// releaseConflicts sets the conflicting items of a batch to run just
	// past the cutoff.
	releaseConflicts string
	// renew extends a live claim's lease: token, now, the new end.
	renew string
	// removeCompleted is remove for an action removing its own item: it
	// also adds the row it deleted, if any, to the list's completed total.
	removeCompleted string
}

// The set-wise statements on a batch on SQLite, completed by
// batchStatement with one placeholder per ID. A done item is deleted only
// if nothing re-added it meanwhile; releaseIDs then frees the claim of
// those that were, and of the items the budget left unstarted;
// releaseConflictIDs frees conflicting items until just past the cutoff,
// unless a re-add gave them a new due time.
const (
	removeDoneIDs      = `DELETE FROM todolist_items WHERE list = ? AND claim = ? AND readded = 0 AND id IN`
	releaseIDs         = `UPDATE todolist_items SET claim = '', claimed_until = 0 WHERE list = ? AND claim = ? AND id IN`
	releaseConflictIDs = `UPDATE todolist_items SET claim = '', claimed_until = 0,
	run_at = CASE WHEN readded = 0 THEN ? ELSE run_at END
WHERE list = ? AND claim = ? AND id IN`
	// renewIDs extends the lease of the rows a batch still holds; the
	// caller checked, in the same write transaction, that it had not
	// ended (see Processor.renewClaim).
	renewIDs = `UPDATE todolist_items SET claimed_until = ? WHERE list = ? AND claim = ? AND id IN`
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

// PostgreSQL's statements. Their placeholders follow SQLite's order where
// they have a counterpart, so the processor passes the same arguments.

// liveIDsPostgres is the IDs held by the live claims of list $1 at $3 (now).
const liveIDsPostgres = `SELECT unnest(ids) FROM todolist_claims WHERE list = $1 AND until > $3`

// readyPostgres is ready on PostgreSQL: list $1, cutoff $2, now $3.
const readyPostgres = `list = $1 AND parked = 0 AND run_at <= $2 AND id NOT IN (` + liveIDsPostgres + `)`

// claimFunction claims a batch on PostgreSQL in one round trip, without
// a transaction around it: it takes the list's claim lock (held until the
// calling statement commits), drops the list's lapsed claims, then picks
// the batch and records its claim row (pickPostgres). Each statement of a
// function takes its own snapshot, so the pick, taken after the lock, sees
// every claim committed before. Its parameters are those of pickPostgres.
const claimFunction = `CREATE FUNCTION todolist_claim(TEXT, BIGINT, BIGINT, INTEGER, TEXT, BIGINT)
RETURNS TABLE (item_id TEXT, item_due BIGINT, item_attempts INTEGER, item_last_error TEXT, item_ref TID, item_version XID)
LANGUAGE plpgsql VOLATILE AS $body$
BEGIN
	-- Under a stronger isolation the pick would read the snapshot taken
	-- before the lock was granted, and miss a claim committed meanwhile.
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'todolist: claims need the read committed isolation level, the session uses %',
			current_setting('transaction_isolation')
			USING ERRCODE = 'feature_not_supported';
	END IF;
	PERFORM pg_advisory_xact_lock(hashtextextended('todolist/' || $1, 0));
	DELETE FROM todolist_claims WHERE list = $1 AND until <= $3;
	RETURN QUERY ` + pickPostgres + `;
END
$body$;`

// pickPostgres picks a batch and records its claim row, and returns the
// picked rows with their ctids and versions (xmin). Its placeholders are
// the list, cutoff, now, limit, token and lease end. The pick is read once
// and used twice, so the claim row holds exactly the rows returned.
const pickPostgres = `WITH picked AS (
	SELECT ctid, xmin, id, due, attempts, last_error FROM todolist_items
	WHERE ` + readyPostgres + `
	ORDER BY run_at LIMIT $4),
held AS (
	INSERT INTO todolist_claims (token, list, until, ids)
	SELECT $5, $1, $6, array_agg(id) FROM picked HAVING COUNT(*) > 0)
SELECT id, due, attempts, last_error, ctid, xmin FROM picked`

// settlePostgres builds the settle statements; held is the sub-statement
// that proves the claim row of token $2 still exists and its lease has not
// ended at $8. Its placeholders are the list, the token, the done rows'
// ctids, IDs, the batch's failures and parkings, the rows' versions and
// the processor's now.
//
// The done rows are joined to the arrays by ctid, which PostgreSQL finds
// with one TID scan per row, and must still be the version claimed (see
// sameRow). The counts are added while the claim holds; completed is the
// number of rows the statement deleted, so an item whose action's own
// transaction removed it (and counted it, see List.RemoveTx) is not
// counted again. A processor whose claim lapsed adds nothing, since
// another one works its items again.
func settlePostgres(held string) string {
	return `WITH held AS (` + held + `),
done AS (
	DELETE FROM todolist_items AS t
	USING unnest($3::tid[], $4::text[], $7::xid[]) AS d(ref, id, version)
	WHERE ` + sameRow + ` AND t.list = $1 AND EXISTS (SELECT 1 FROM held)
	RETURNING 1),
counted AS (
	INSERT INTO todolist_counters (list, completed, failures, parkings)
	SELECT $1, n.completed, n.failures, n.parkings FROM (
		SELECT (SELECT COUNT(*) FROM done) AS completed,
			$5::bigint AS failures, $6::bigint AS parkings) AS n
	WHERE (n.completed > 0 OR n.failures > 0 OR n.parkings > 0) AND EXISTS (SELECT 1 FROM held)` + addCounts + `)
SELECT COUNT(*) FROM done`
}

// sameRow matches a row t of todolist_items with the row d a batch
// claimed (its ref, id and version): the same place and the same version.
// Any change since the claim — a re-add, a Remove and Add — makes a new
// version, even when vacuum has since put it back in the same place, so
// the new work is kept. (A version that vacuum froze meanwhile no longer
// matches either: the item is then worked again, never lost.)
const sameRow = `t.ctid = d.ref AND t.id = d.id AND t.xmin = d.version`

// heldPostgres is the existence of the claim whose token is in the given
// placeholder and whose lease has not ended at now, for a statement that
// writes an item's outcome: the lock on the claim row keeps the next
// claimer from dropping it, once lapsed, until the write is committed.
func heldPostgres(token, now string) string {
	return `SELECT 1 FROM todolist_claims WHERE token = ` + token + ` AND until > ` + now + ` FOR SHARE`
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
		// The row must still carry the batch's claim, unlapsed at the
		// processor's now (the last placeholder).
		fail: `UPDATE todolist_items SET attempts = ?, last_error = ?, run_at = ?, parked = ?, claim = '', claimed_until = 0
WHERE list = ? AND id = ? AND claim = ? AND readded = 0 AND claimed_until > ?`,
		backlog: `SELECT COUNT(*) FROM todolist_items WHERE ` + ready,
		// The list and a batch's completed items, failures and parkings.
		count: `INSERT INTO todolist_counters (list, completed, failures, parkings) VALUES (?, ?, ?, ?)` + addCounts,
	}
	for _, s := range []*string{&q.add, &q.remove, &q.get, &q.due, &q.parked, &q.reactivate, &q.stats, &q.allStats, &q.claim, &q.fail, &q.backlog, &q.count} {
		*s = db.Rebind(*s)
	}
	if sqldb.DialectOf(db) == sqldb.Postgres {
		q.claimSets = true
		// An item is claimed when a live claim row holds its ID; the
		// latest lease among those that hold it is the claim reported.
		q.get = `SELECT t.id, t.due, t.run_at, t.attempts, t.last_error, t.parked,
	COALESCE(c.token, ''), COALESCE(c.until, 0)
FROM todolist_items AS t LEFT JOIN LATERAL (
	SELECT token, until FROM todolist_claims AS c
	WHERE c.list = t.list AND t.id = ANY(c.ids) ORDER BY until DESC LIMIT 1) AS c ON true
WHERE t.list = $1 AND t.id = $2`
		q.due = `SELECT ` + itemColumns + ` FROM todolist_items
WHERE ` + readyPostgres + ` ORDER BY run_at, id LIMIT $4`
		q.backlog = `SELECT COUNT(*) FROM todolist_items WHERE ` + readyPostgres
		q.claim = `SELECT item_id, item_due, item_attempts, item_last_error, item_ref, item_version
FROM todolist_claim($1, $2, $3, $4, $5, $6)`
		q.settle = settlePostgres(`DELETE FROM todolist_claims WHERE token = $2 AND until > $8 RETURNING 1`)
		q.settleKeep = settlePostgres(heldPostgres("$2", "$8"))
		// The attempt, error, next run and parked flag, then the list,
		// ID, token, ctid and version of the failed item, and the
		// processor's now. The item leaves the batch's claim row at once,
		// so that it is retried at its backoff time even while the rest
		// of the batch still runs, as on SQLite, where the update clears
		// the row's claim. (The array is rewritten, but only on a
		// failure.)
		q.fail = `WITH held AS (
	UPDATE todolist_claims SET ids = array_remove(ids, $6::text) WHERE token = $7 AND until > $10 RETURNING 1)
UPDATE todolist_items AS t SET attempts = $1, last_error = $2, run_at = $3, parked = $4
FROM (SELECT $8::tid AS ref, $6::text AS id, $9::xid AS version) AS d
WHERE ` + sameRow + ` AND t.list = $5 AND EXISTS (SELECT 1 FROM held)`
		q.renew = `UPDATE todolist_claims SET until = $3 WHERE token = $1 AND until > $2`
		// The list and the ID; the counters are written only when the
		// item was there, so removing it twice counts it once.
		q.removeCompleted = `WITH gone AS (
	DELETE FROM todolist_items WHERE list = $1 AND id = $2 RETURNING 1)
INSERT INTO todolist_counters (list, completed, failures, parkings)
SELECT $1, COUNT(*), 0, 0 FROM gone HAVING COUNT(*) > 0` + addCounts
		// The next run, the list, the token, then the conflicting rows'
		// ctids, IDs and versions. A re-added row is a new version and
		// keeps its own due time.
		q.releaseConflicts = `WITH held AS (` + heldPostgres("$3", "$7") + `)
UPDATE todolist_items AS t SET run_at = $1
FROM unnest($4::tid[], $5::text[], $6::xid[]) AS d(ref, id, version)
WHERE ` + sameRow + ` AND t.list = $2 AND EXISTS (SELECT 1 FROM held)`
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
