package todolist

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// postgresDriver is the driver of PostgreSQL, which lets processors write
// at once: a batch is held by one row of todolist_claims, taken by the
// claim function of the schema (schema.go) under a per-list advisory lock,
// and its rows are addressed by ctid and version (see sameRow). Its
// statements use $n placeholders, in SQLite's order where they have a
// counterpart.
type postgresDriver struct{ sqlDriver }

// postgresStatements are PostgreSQL's reads for sqlDriver; the pick's rows
// end with their versions.
var postgresStatements = statements{get: getPostgres, due: duePostgres, backlog: backlogPostgres, pickTx: pickTxPostgres, versioned: true}

// PostgreSQL's statements.
const (
	// getPostgres: an item is claimed when a live claim row holds its ID;
	// the latest lease among those that hold it is the claim reported.
	getPostgres = `SELECT t.id, t.due, t.run_at, t.attempts, t.last_error, t.parked,
	COALESCE(c.token, ''), COALESCE(c.until, 0)
FROM todolist_items AS t LEFT JOIN LATERAL (
	SELECT token, until FROM todolist_claims AS c
	WHERE c.list = t.list AND t.id = ANY(c.ids) ORDER BY until DESC LIMIT 1) AS c ON true
WHERE t.list = $1 AND t.id = $2`
	duePostgres = `SELECT ` + itemColumns + ` FROM todolist_items
WHERE ` + readyPostgres + ` ORDER BY run_at, id LIMIT $4`
	backlogPostgres = `SELECT COUNT(*) FROM todolist_items WHERE ` + readyPostgres
	claimPostgres   = `SELECT item_id, item_due, item_attempts, item_last_error, item_ref, item_version
FROM todolist_claim($1, $2, $3, $4, $5, $6)`

	// failPostgres records a failed attempt: the attempt, error, next run
	// and parked flag, then the list, ID, token, ctid and version of the
	// failed item, and the processor's now. The item leaves the batch's
	// claim row at once, so that it is retried at its backoff time even
	// while the rest of the batch still runs, as on SQLite, where the
	// update clears the row's claim. (The array is rewritten, but only on
	// a failure.)
	failPostgres = `WITH held AS (
	UPDATE todolist_claims SET ids = array_remove(ids, $6::text) WHERE token = $7 AND until > $10 RETURNING 1)
UPDATE todolist_items AS t SET attempts = $1, last_error = $2, run_at = $3, parked = $4
FROM (SELECT $8::tid AS ref, $6::text AS id, $9::xid AS version) AS d
WHERE ` + sameRow + ` AND t.list = $5 AND EXISTS (SELECT 1 FROM held)`
	// renewPostgres extends a live claim's lease: token, now, the new end.
	renewPostgres = `UPDATE todolist_claims SET until = $3 WHERE token = $1 AND until > $2`
	// removeCompletedPostgres: the list and the ID; the counters are
	// written only when the item was there, so removing it twice counts
	// it once.
	removeCompletedPostgres = `WITH gone AS (
	DELETE FROM todolist_items WHERE list = $1 AND id = $2 RETURNING 1)
INSERT INTO todolist_counters (list, completed, failures, parkings)
SELECT $1, COUNT(*), 0, 0 FROM gone HAVING COUNT(*) > 0` + addCounts

	// removeManyPostgres deletes the IDs in $2 from list $1 in one
	// statement; removeCompletedManyPostgres does too and counts the rows
	// it deleted completed, as removeCompletedPostgres does one.
	removeManyPostgres          = `DELETE FROM todolist_items WHERE list = $1 AND id = ANY($2::text[])`
	removeCompletedManyPostgres = `WITH gone AS (
	DELETE FROM todolist_items WHERE list = $1 AND id = ANY($2::text[]) RETURNING 1)
INSERT INTO todolist_counters (list, completed, failures, parkings)
SELECT $1, COUNT(*), 0, 0 FROM gone HAVING COUNT(*) > 0` + addCounts
	// addManyPostgres upserts a chunk in one statement whatever its
	// length: the list, then the IDs and their due times as two arrays,
	// which PostgreSQL unnests row by row in array order.
	addManyPostgres = `INSERT INTO todolist_items (list, id, due, run_at)
SELECT $1, d.id, d.due, d.due FROM unnest($2::text[], $3::bigint[]) AS d(id, due)` + addUpsert

	// pickTxPostgres takes a transactional batch: it locks the rows and
	// skips those another transaction has locked, so processors share a
	// list's due items between them. The placeholders are those of the
	// claim: list, cutoff, now, limit.
	pickTxPostgres = `SELECT id, due, attempts, last_error, xmin::text::bigint FROM todolist_items
WHERE ` + readyPostgres + ` ORDER BY run_at LIMIT $4 FOR UPDATE SKIP LOCKED`
	// removeTxPostgres deletes the done rows of a transactional batch that
	// are still the version picked: the list, the IDs and the versions.
	// A row the action changed in the transaction is a new version.
	removeTxPostgres = `DELETE FROM todolist_items AS t
USING unnest($2::text[], $3::bigint[]) AS d(id, version)
WHERE t.list = $1 AND t.id = d.id AND t.xmin::text::bigint = d.version`
	// conflictTxPostgres sets the conflicting rows of a transactional
	// batch, still the versions picked, to run just past the cutoff: the
	// next run, the list, the IDs and the versions.
	conflictTxPostgres = `UPDATE todolist_items AS t SET run_at = $1
FROM unnest($3::text[], $4::bigint[]) AS d(id, version)
WHERE t.list = $2 AND t.id = d.id AND t.xmin::text::bigint = d.version`
	// failTxPostgres records a failed attempt on the row still the
	// version picked, and not locked by another transaction (one that
	// took the item after a batch failed as a whole and was rolled back):
	// the attempt, error, next run, parked flag, list, ID and version.
	failTxPostgres = `UPDATE todolist_items AS t SET attempts = $1, last_error = $2, run_at = $3, parked = $4
FROM (SELECT ctid FROM todolist_items
	WHERE list = $5 AND id = $6 AND xmin::text::bigint = $7 FOR UPDATE SKIP LOCKED) AS h
WHERE t.ctid = h.ctid`
	// holdPostgres locks an item's row: the list and the ID.
	holdPostgres = `SELECT 1 FROM todolist_items WHERE list = $1 AND id = $2 FOR UPDATE`
)

// liveIDsPostgres is the IDs held by the live claims of list $1 at $3 (now).
const liveIDsPostgres = `SELECT unnest(ids) FROM todolist_claims WHERE list = $1 AND until > $3`

// readyPostgres is readySQLite on PostgreSQL: list $1, cutoff $2, now $3.
const readyPostgres = `list = $1 AND parked = 0 AND run_at <= $2 AND id NOT IN (` + liveIDsPostgres + `)`

// addManyChunkPostgres is how many items one statement of AddMany writes:
// the statement takes three arrays whatever their length, and past a few
// thousand rows a bigger one only costs more memory at once
// (BenchmarkAddMany: the throughput is flat from 5,000 rows on).
const addManyChunkPostgres = 5000

// The statements built from parts. settleDeletePostgres deletes a batch's
// claim row and its done items, and adds the batch's counts to the list's
// totals; settleKeepPostgres does the same but leaves the claim row to
// lapse. Both return the count deleted.
var (
	// releaseConflictsPostgres: the next run, the list, the token, then
	// the conflicting rows' ctids, IDs and versions, and the processor's
	// now. A re-added row is a new version and keeps its own due time.
	releaseConflictsPostgres = `WITH held AS (` + heldPostgres("$3", "$7") + `)
UPDATE todolist_items AS t SET run_at = $1
FROM unnest($4::tid[], $5::text[], $6::xid[]) AS d(ref, id, version)
WHERE ` + sameRow + ` AND t.list = $2 AND EXISTS (SELECT 1 FROM held)`
	settleDeletePostgres = settlePostgres(`DELETE FROM todolist_claims WHERE token = $2 AND until > $8 RETURNING 1`)
	settleKeepPostgres   = settlePostgres(heldPostgres("$2", "$8"))
)

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

func (postgresDriver) removeCompleted(ctx context.Context, ext sqlx.ExtContext, list, id string) error {
	// One statement, so that completing an item costs its action no
	// round trip more than removing it.
	_, err := ext.ExecContext(ctx, removeCompletedPostgres, list, id)
	return err
}

func (postgresDriver) removeMany(ctx context.Context, ext sqlx.ExtContext, list string, ids []string) error {
	_, err := ext.ExecContext(ctx, removeManyPostgres, list, ids)
	return err
}

func (postgresDriver) removeCompletedMany(ctx context.Context, ext sqlx.ExtContext, list string, ids []string) error {
	_, err := ext.ExecContext(ctx, removeCompletedManyPostgres, list, ids)
	return err
}

func (postgresDriver) addManyChunk() int { return addManyChunkPostgres }

func (postgresDriver) addMany(ctx context.Context, ext sqlx.ExtContext, list string, rows manyRows, size int) (int, error) {
	return inChunks(len(rows.ids), size, func(from, to int) error {
		_, err := ext.ExecContext(ctx, addManyPostgres, list, rows.ids[from:to], rows.dues[from:to])
		return err
	})
}

// pageQuery reads the page first, then each of its items looks up the
// latest live claim holding its ID, as get does. A database whose
// schema predates the claims table has no claims to look up. Its
// placeholders are ?, rebound with the page's.
func (postgresDriver) pageQuery(page, key string, tables map[string]bool, list string, now int64) (string, []any) {
	if !tables["todolist_claims"] {
		return page, nil
	}
	return `SELECT p.id, p.due, p.run_at, p.attempts, p.last_error, p.parked,
	COALESCE(c.token, ''), COALESCE(c.until, 0)
FROM (` + page + `) AS p LEFT JOIN LATERAL (
	SELECT token, until FROM todolist_claims AS c
	WHERE c.list = ? AND c.until > ? AND p.id = ANY(c.ids) ORDER BY until DESC LIMIT 1) AS c ON true
ORDER BY p.` + key + `, p.id`, []any{list, now}
}

// claim runs the claim function through pgx itself rather than
// database/sql, which converts every value of every row twice (to a
// driver value, then to the destination): with 1,000 rows a batch, that
// was a tenth of a one-worker tick. The claim row is the record.
func (postgresDriver) claim(ctx context.Context, db *sqlx.DB, r readyItems, token string, leaseEnd time.Time) (batch []claimed, record bool, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	defer func() { err = errors.Join(err, conn.Close()) }()
	err = conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the pgx driver's connection expected, got %T", driverConn)
		}
		rows, err := c.Conn().Query(ctx, claimPostgres, r.list, r.cutoff, r.now, r.limit, token, sqldb.EncodeTime(leaseEnd))
		if err != nil {
			return err
		}
		defer rows.Close()
		batch = make([]claimed, 0, min(r.limit, batchPrealloc))
		var (
			id, lastError string
			due           int64
			attempts      int
			ref           pgtype.TID
			version       uint32
		)
		for rows.Next() {
			if err := rows.Scan(&id, &due, &attempts, &lastError, &ref, &version); err != nil {
				return err
			}
			batch = append(batch, claimed{
				Item: Item{
					ID: id, Due: sqldb.DecodeTime(due), Attempts: attempts, LastError: lastError,
					NextAttempt: leaseEnd, Claimed: true,
				},
				ref: rowPlace{block: ref.BlockNumber, offset: ref.OffsetNumber}, version: version,
			})
		}
		return rows.Err()
	})
	return batch, len(batch) > 0, err
}

func (postgresDriver) renew(ctx context.Context, db *sqlx.DB, r renewal) (time.Time, bool, error) {
	now := r.clock.Now()
	newEnd := now.Add(r.lease)
	n, err := rowsAffected(db.ExecContext(ctx, renewPostgres, r.token, sqldb.EncodeTime(now), sqldb.EncodeTime(newEnd)))
	if err != nil {
		return time.Time{}, false, err
	}
	return newEnd, n > 0, nil
}

func (postgresDriver) releaseConflicts(ctx context.Context, db *sqlx.DB, c claimRef, items []claimed, next, now int64) error {
	ids, refs, versions := idsAndRefs(items)
	_, err := db.ExecContext(ctx, releaseConflictsPostgres, next, c.list, c.token, refs, ids, versions, now)
	return err
}

// releaseUnstarted writes nothing: the items are released with the claim
// row when the batch is settled, at the end of the tick.
func (postgresDriver) releaseUnstarted(_ context.Context, _ *sqlx.DB, _ claimRef, items []claimed) (int, error) {
	return len(items), nil
}

// fail: a row no longer the version claimed was removed or re-added; the
// statement took the item out of the claim row either way.
func (postgresDriver) fail(ctx context.Context, db *sqlx.DB, c claimRef, item claimed, it Item, now int64) (bool, error) {
	r, err := db.ExecContext(ctx, failPostgres, it.Attempts, it.LastError, sqldb.EncodeTime(it.NextAttempt), parkedFlag(it), c.list, item.ID, c.token, item.ref.tid(), item.version, now)
	n, err := rowsAffected(r, err)
	return n > 0, err
}

func (postgresDriver) settle(ctx context.Context, db *sqlx.DB, s settlement) (removed int, held bool, err error) {
	settle := settleDeletePostgres
	if s.lapse {
		settle = settleKeepPostgres
	}
	refs := make([]pgtype.TID, len(s.done.refs))
	for i, r := range s.done.refs {
		refs[i] = r.tid()
	}
	ids, versions := nonNil(s.done.ids), nonNil(s.done.versions)
	now := sqldb.EncodeTime(s.now())
	err = db.QueryRowContext(ctx, settle, s.list, s.token, refs, ids, s.failures, s.parkings, versions, now).Scan(&removed)
	return removed, true, err
}

// releaseReadded writes nothing: a re-added row is a new version, which
// the claim row never held.
func (postgresDriver) releaseReadded(context.Context, *sqlx.DB, claimRef, []string) error {
	return nil
}

// unchangedTx keeps the whole batch: the statements that write it match
// each row's version themselves.
func (postgresDriver) unchangedTx(_ context.Context, _ *sqlx.Tx, _ string, batch []claimed) ([]claimed, error) {
	return batch, nil
}

func (postgresDriver) removeTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed) (int, error) {
	ids, versions := idsAndVersions(batch)
	r, err := tx.ExecContext(ctx, removeTxPostgres, list, ids, versions)
	return rowsAffected(r, err)
}

func (postgresDriver) conflictTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed, next int64) error {
	ids, versions := idsAndVersions(batch)
	_, err := tx.ExecContext(ctx, conflictTxPostgres, next, list, ids, versions)
	return err
}

func (postgresDriver) failTx(ctx context.Context, tx *sqlx.Tx, list string, item claimed, it Item) (bool, error) {
	r, err := tx.ExecContext(ctx, failTxPostgres, it.Attempts, it.LastError, sqldb.EncodeTime(it.NextAttempt), parkedFlag(it), list, item.ID, int64(item.version))
	n, err := rowsAffected(r, err)
	return n > 0, err
}

func (postgresDriver) hold(ctx context.Context, ext sqlx.ExtContext, list, id string) error {
	if ext == nil {
		return fmt.Errorf("%w: ext must not be nil", ErrInvalidArgument)
	}
	rows, err := ext.QueryContext(ctx, holdPostgres, list, id)
	if err != nil {
		return err
	}
	return rows.Close()
}

// tid is r as PostgreSQL's ctid.
func (r rowPlace) tid() pgtype.TID {
	return pgtype.TID{BlockNumber: r.block, OffsetNumber: r.offset, Valid: true}
}

// nonNil returns s, or an empty slice for nil: an empty array, not NULL,
// which a statement can count.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// idsAndRefs returns the IDs, ctids and versions of items, each an empty
// array rather than NULL when items is empty, so that a statement can
// count them.
func idsAndRefs(items []claimed) (ids []string, refs []pgtype.TID, versions []uint32) {
	ids, refs, versions = make([]string, len(items)), make([]pgtype.TID, len(items)), make([]uint32, len(items))
	for i, it := range items {
		ids[i], refs[i], versions[i] = it.ID, it.ref.tid(), it.version
	}
	return ids, refs, versions
}

func idsAndVersions(items []claimed) (ids []string, versions []int64) {
	ids, versions = make([]string, len(items)), make([]int64, len(items))
	for i, it := range items {
		ids[i], versions[i] = it.ID, int64(it.version)
	}
	return ids, versions
}
