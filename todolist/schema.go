package todolist

import "github.com/passage-of-time/passage/internal/sqldb"

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

// claimFunction claims a batch on PostgreSQL in one round trip, without
// a transaction around it: it takes the list's claim lock (held until the
// calling statement commits), drops the list's lapsed claims, then picks
// the batch and records its claim row (pickPostgres). Each statement of a
// function takes its own snapshot, so the pick, taken after the lock, sees
// every claim committed before. Its parameters are those of pickPostgres.
// It is part of migration 3: the driver's claim (claimPostgres) calls it.
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
