package todolist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// sqliteDriver is the driver of SQLite, which has one writer at a time:
// a claim is written on the claimed rows (claim, claimed_until), and a
// statement's own write lock keeps two processors from picking one row.
// Its statements use ? placeholders, which need no rebinding.
type sqliteDriver struct{ sqlDriver }

// sqliteStatements are SQLite's reads for sqlDriver.
var sqliteStatements = statements{get: getSQLite, due: dueSQLite, backlog: backlogSQLite, pickTx: pickTxSQLite}

// readySQLite is the condition for an item a processor may claim: the
// three placeholders are the list, the cutoff and the processor's now.
const readySQLite = `list = ? AND parked = 0 AND run_at <= ? AND claimed_until <= ?`

// SQLite's statements.
const (
	getSQLite = `SELECT ` + itemColumns + ` FROM todolist_items WHERE list = ? AND id = ?`
	dueSQLite = `SELECT ` + itemColumns + ` FROM todolist_items
WHERE ` + readySQLite + ` ORDER BY run_at, id LIMIT ?`
	backlogSQLite = `SELECT COUNT(*) FROM todolist_items WHERE ` + readySQLite

	// claimSQLite claims a batch. Its placeholders are the list, cutoff,
	// now, limit, token, lease end and the list again.
	claimSQLite = `WITH picked AS (
	SELECT id FROM todolist_items WHERE ` + readySQLite + `
	ORDER BY run_at LIMIT ?)
UPDATE todolist_items SET claim = ?, claimed_until = ?, readded = 0
WHERE list = ? AND id IN (SELECT id FROM picked)
RETURNING id, due, attempts, last_error`

	// failSQLite records a failed attempt: the attempt, error, next run
	// and parked flag, then the list, ID and token. The row must still
	// carry the batch's claim, unlapsed at the processor's now (the last
	// placeholder).
	failSQLite = `UPDATE todolist_items SET attempts = ?, last_error = ?, run_at = ?, parked = ?, claim = '', claimed_until = 0
WHERE list = ? AND id = ? AND claim = ? AND readded = 0 AND claimed_until > ?`

	// The set-wise statements on a batch, completed by idList with one
	// placeholder per ID. A done item is deleted only if nothing re-added
	// it meanwhile; releaseIDs then frees the claim of those that were,
	// and of the items the budget left unstarted; releaseConflictIDs
	// frees conflicting items until just past the cutoff, unless a re-add
	// gave them a new due time.
	removeIDs          = `DELETE FROM todolist_items WHERE list = ? AND id IN`
	removeDoneIDs      = `DELETE FROM todolist_items WHERE list = ? AND claim = ? AND readded = 0 AND id IN`
	releaseIDs         = `UPDATE todolist_items SET claim = '', claimed_until = 0 WHERE list = ? AND claim = ? AND id IN`
	releaseConflictIDs = `UPDATE todolist_items SET claim = '', claimed_until = 0,
	run_at = CASE WHEN readded = 0 THEN ? ELSE run_at END
WHERE list = ? AND claim = ? AND id IN`
	// renewIDs extends the lease of the rows a batch still holds; the
	// caller checked, in the same write transaction, that it had not
	// ended (see renew).
	renewIDs = `UPDATE todolist_items SET claimed_until = ? WHERE list = ? AND claim = ? AND id IN`

	// pickTxSQLite takes a transactional batch under the write lock, which
	// leaves no one to share with: list, cutoff, now, limit.
	pickTxSQLite = `SELECT id, due, attempts, last_error FROM todolist_items
WHERE ` + readySQLite + ` ORDER BY run_at LIMIT ?`
	// failTxSQLite records a failed attempt on an item of a transactional
	// batch.
	failTxSQLite = `UPDATE todolist_items SET attempts = ?, last_error = ?, run_at = ?, parked = ?
WHERE list = ? AND id = ?`
	// dueTxSQLite reads back the due times of a batch's items, since a
	// row has no version: an item whose due time changed is not the one
	// picked.
	dueTxSQLite = `SELECT id, due FROM todolist_items WHERE list = ? AND id IN`
	// conflictTxIDs sets the conflicting items of a transactional batch
	// to run just past the cutoff: the next run, the list.
	conflictTxIDs = `UPDATE todolist_items SET run_at = ? WHERE list = ? AND id IN`
)

// addManyChunkSQLite is how many items one statement of AddMany writes.
// SQLite binds at most 32,766 parameters a statement and the statement
// takes four an item; past a few thousand rows a bigger statement only
// costs more memory at once (BenchmarkAddMany: the throughput is flat
// from 1,000 rows on).
const addManyChunkSQLite = 1000

func (sqliteDriver) removeCompleted(ctx context.Context, ext sqlx.ExtContext, list, id string) error {
	// Two statements: SQLite cannot write two tables in one, and runs in
	// process anyway.
	r, err := ext.ExecContext(ctx, removeStatement, list, id)
	return countRemoved(ctx, ext, list, r, err)
}

func (sqliteDriver) removeMany(ctx context.Context, ext sqlx.ExtContext, list string, ids []string) error {
	_, err := execIDs(ctx, ext, removeIDs, ids, list)
	return err
}

func (sqliteDriver) removeCompletedMany(ctx context.Context, ext sqlx.ExtContext, list string, ids []string) error {
	r, err := execIDs(ctx, ext, removeIDs, ids, list)
	return countRemoved(ctx, ext, list, r, err)
}

// countRemoved adds the rows a removal deleted, if any, to list's
// completed total.
func countRemoved(ctx context.Context, ext sqlx.ExtContext, list string, r sql.Result, err error) error {
	n, err := rowsAffected(r, err)
	if err != nil || n == 0 {
		return err
	}
	_, err = ext.ExecContext(ctx, countStatement, list, n, 0, 0)
	return err
}

func (sqliteDriver) addManyChunk() int { return addManyChunkSQLite }

// addMany parses the statement of a full chunk once and runs it for every
// full chunk, when ext can prepare it: parsing 4,000 parameters is a good
// part of running them.
func (sqliteDriver) addMany(ctx context.Context, ext sqlx.ExtContext, list string, rows manyRows, size int) (int, error) {
	exec := func(args ...any) error {
		_, err := ext.ExecContext(ctx, addManySQLite(len(args)/4), args...)
		return err
	}
	if p, ok := ext.(preparer); ok && len(rows.ids) >= 2*size {
		stmt, err := p.PrepareContext(ctx, addManySQLite(size))
		if err != nil {
			return 0, fmt.Errorf("prepare: %w", err)
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
	return inChunks(len(rows.ids), size, func(from, to int) error {
		args = args[:0]
		for i := from; i < to; i++ {
			args = append(args, list, rows.ids[i], rows.dues[i], rows.dues[i])
		}
		return exec(args...)
	})
}

// preparer is what *sqlx.Tx and *sqlx.DB offer besides sqlx.ExtContext.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// addManySQLite returns the upsert of n items, four parameters an item:
// the list, the ID and the due time twice (due and run_at). Plain ?
// parameters, not numbered ones reused (?1 for the list): SQLite looks a
// reused number up in a list, which made a statement of 10,000 rows seven
// times slower than one of 1,000.
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

// pageQuery leaves page as it is: the claims are on the rows.
func (sqliteDriver) pageQuery(page, _ string, _ map[string]bool, _ string, _ int64) (string, []any) {
	return page, nil
}

func (sqliteDriver) claim(ctx context.Context, db *sqlx.DB, r readyItems, token string, leaseEnd time.Time) ([]claimed, bool, error) {
	rows, err := db.QueryContext(ctx, claimSQLite, r.list, r.cutoff, r.now, r.limit, token, sqldb.EncodeTime(leaseEnd), r.list)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	batch := make([]claimed, 0, min(r.limit, batchPrealloc))
	for rows.Next() {
		it := claimed{Item: Item{NextAttempt: leaseEnd, Claimed: true}}
		var due int64
		if err := rows.Scan(&it.ID, &due, &it.Attempts, &it.LastError); err != nil {
			return nil, false, err
		}
		it.Due = sqldb.DecodeTime(due)
		batch = append(batch, it)
	}
	return batch, false, rows.Err()
}

// renew: a claim is on the rows, and rows that are gone (done, removed)
// or released (failed) say nothing about whether the others were taken.
// The write transaction answers instead: while it holds SQLite's one
// write lock no one claims, and before it anyone taking the items had to
// see the lease ended, which the clock read inside it then shows too.
func (sqliteDriver) renew(ctx context.Context, db *sqlx.DB, r renewal) (newEnd time.Time, held bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return time.Time{}, false, err
	}
	defer func() {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			err = errors.Join(err, rbErr)
		}
	}()
	now := r.clock.Now()
	if !now.Before(r.end) {
		return time.Time{}, false, nil
	}
	newEnd = now.Add(r.lease)
	if _, err := execIDs(ctx, tx, renewIDs, idsOf(r.batch), sqldb.EncodeTime(newEnd), r.list, r.token); err != nil {
		return time.Time{}, false, err
	}
	if err := tx.Commit(); err != nil {
		return time.Time{}, false, err
	}
	return newEnd, true, nil
}

func (sqliteDriver) releaseConflicts(ctx context.Context, db *sqlx.DB, c claimRef, items []claimed, next, _ int64) error {
	_, err := execIDs(ctx, db, releaseConflictIDs, idsOf(items), next, c.list, c.token)
	return err
}

func (sqliteDriver) releaseUnstarted(ctx context.Context, db *sqlx.DB, c claimRef, items []claimed) (int, error) {
	r, err := execIDs(ctx, db, releaseIDs, idsOf(items), c.list, c.token)
	return rowsAffected(r, err)
}

// fail: a row that no longer carries the claim was removed, re-claimed
// after the lease, or re-added; a re-added one, which kept this claim, is
// released as new work.
func (sqliteDriver) fail(ctx context.Context, db *sqlx.DB, c claimRef, item claimed, it Item, now int64) (bool, error) {
	r, err := db.ExecContext(ctx, failSQLite, it.Attempts, it.LastError, sqldb.EncodeTime(it.NextAttempt), parkedFlag(it), c.list, it.ID, c.token, now)
	n, err := rowsAffected(r, err)
	if err != nil || n > 0 {
		return n > 0, err
	}
	if _, err := execIDs(ctx, db, releaseIDs, []string{item.ID}, c.list, c.token); err != nil {
		return false, fmt.Errorf("release re-added %q: %w", item.ID, err)
	}
	return false, nil
}

// settle deletes and counts in a transaction: SQLite cannot modify two
// tables in one statement. The lease is checked inside the write
// transaction, where no one else can claim (see renew).
func (sqliteDriver) settle(ctx context.Context, db *sqlx.DB, s settlement) (removed int, held bool, err error) {
	if len(s.done.ids) == 0 {
		return 0, true, countBatch(ctx, db, countStatement, totals{list: s.list, failures: s.failures, parkings: s.parkings})
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer func() {
		if err == nil {
			return
		}
		// A failed commit has already ended the transaction.
		if rbErr := tx.Rollback(); !errors.Is(rbErr, sql.ErrTxDone) {
			err = errors.Join(err, rbErr)
		}
	}()
	if held = s.holds(); held {
		r, err := execIDs(ctx, tx, removeDoneIDs, s.done.ids, s.list, s.token)
		if removed, err = rowsAffected(r, err); err != nil {
			return 0, false, err
		}
	}
	// Only the rows deleted here: those the actions removed themselves
	// were counted by their removal (see List.RemoveTx).
	if err := countBatch(ctx, tx, countStatement, totals{s.list, removed, s.failures, s.parkings}); err != nil {
		return 0, false, err
	}
	return removed, held, tx.Commit()
}

// releaseReadded frees the done items a re-add kept under the claim,
// which hid them until now.
func (sqliteDriver) releaseReadded(ctx context.Context, db *sqlx.DB, c claimRef, ids []string) error {
	_, err := execIDs(ctx, db, releaseIDs, ids, c.list, c.token)
	return err
}

// unchangedTx reads the due times back: a row has no version, so one
// whose due time changed in the transaction (without going through the
// list) is new work.
func (sqliteDriver) unchangedTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed) ([]claimed, error) {
	if len(batch) == 0 {
		return batch, nil
	}
	args := make([]any, 0, len(batch)+1)
	args = append(args, list)
	for _, it := range batch {
		args = append(args, it.ID)
	}
	rows, err := tx.QueryContext(ctx, idList(dueTxSQLite, len(batch)), args...)
	if err != nil {
		return nil, fmt.Errorf("read back due times: %w", err)
	}
	defer rows.Close()
	dues := make(map[string]int64, len(batch))
	for rows.Next() {
		var id string
		var due int64
		if err := rows.Scan(&id, &due); err != nil {
			return nil, fmt.Errorf("read back due times: %w", err)
		}
		dues[id] = due
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read back due times: %w", err)
	}
	kept := batch[:0:0]
	for _, it := range batch {
		if due, ok := dues[it.ID]; ok && due == sqldb.EncodeTime(it.Due) {
			kept = append(kept, it)
		}
	}
	return kept, nil
}

func (sqliteDriver) removeTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed) (int, error) {
	r, err := execIDs(ctx, tx, removeIDs, idsOf(batch), list)
	return rowsAffected(r, err)
}

func (sqliteDriver) conflictTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed, next int64) error {
	_, err := execIDs(ctx, tx, conflictTxIDs, idsOf(batch), next, list)
	return err
}

func (sqliteDriver) failTx(ctx context.Context, tx *sqlx.Tx, list string, item claimed, it Item) (bool, error) {
	r, err := tx.ExecContext(ctx, failTxSQLite, it.Attempts, it.LastError, sqldb.EncodeTime(it.NextAttempt), parkedFlag(it), list, item.ID)
	n, err := rowsAffected(r, err)
	return n > 0, err
}

// hold does nothing: SQLite's write transactions exclude each other.
func (sqliteDriver) hold(context.Context, sqlx.ExtContext, string, string) error { return nil }

// execIDs runs prefix followed by the list of ids, after args, on ext.
func execIDs(ctx context.Context, ext sqlx.ExecerContext, prefix string, ids []string, args ...any) (sql.Result, error) {
	all := make([]any, 0, len(args)+len(ids))
	all = append(all, args...)
	for _, id := range ids {
		all = append(all, id)
	}
	return ext.ExecContext(ctx, idList(prefix, len(ids)), all...)
}

// idList returns prefix followed by "(?, ?, …)" with n placeholders: the
// set-wise delete and release of a batch.
func idList(prefix string, n int) string {
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
	return b.String()
}
