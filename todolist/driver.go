package todolist

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// driver is what the list and its processors ask of one database: every
// statement in which the databases differ (how an item is claimed, held,
// settled and read back). The logic calls it and never asks which database
// it runs on; each database's statements and tuning live in its own file
// (driver_sqlite.go, driver_postgres.go), and driver_test.go runs one
// contract against every driver. The statements both databases run alike,
// and the schema, are in sql.go.
//
// Times are passed encoded (sqldb.EncodeTime) where a statement only
// compares them, and as instants where the driver reads the clock itself.
type driver interface {
	// removeCompleted deletes id from list on ext and, if it was there,
	// adds one to the list's completed total in the same transaction.
	removeCompleted(ctx context.Context, ext sqlx.ExtContext, list, id string) error
	// removeMany deletes ids (at most MaxBatchSize) from list on ext;
	// removeCompletedMany also counts the rows it deleted completed.
	removeMany(ctx context.Context, ext sqlx.ExtContext, list string, ids []string) error
	removeCompletedMany(ctx context.Context, ext sqlx.ExtContext, list string, ids []string) error
	// addManyChunk is how many items one statement of addMany writes.
	addManyChunk() int
	// addMany upserts rows into list on ext by Add's rules, size items a
	// statement, in order; on an error, failedAt is the index of the
	// first item of the chunk that failed.
	addMany(ctx context.Context, ext sqlx.ExtContext, list string, rows manyRows, size int) (failedAt int, err error)

	// get reads the item id of list, as itemColumns.
	get(ctx context.Context, db *sqlx.DB, list, id string) (*sql.Rows, error)
	// due reads up to limit items of list a processor could claim at now
	// with the cutoff, as itemColumns, by run_at then ID.
	due(ctx context.Context, db *sqlx.DB, list string, cutoff, now int64, limit int) (*sql.Rows, error)
	// backlog counts the items of list a processor could claim at now
	// with the cutoff.
	backlog(ctx context.Context, db *sqlx.DB, list string, cutoff, now int64) (int, error)
	// pageQuery completes page, a statement reading a page of items as
	// itemColumns ordered by key then ID, so that each item's claim is
	// judged at now, given the tables the database has; args are the
	// placeholders it adds after page's.
	pageQuery(page, key string, tables map[string]bool, list string, now int64) (query string, args []any)

	// claim takes up to limit items of list ready at now with the cutoff,
	// earliest run_at first, under token with a lease ending at leaseEnd.
	// The items come in no particular order. record reports that the
	// claim left a record that only settle deletes.
	claim(ctx context.Context, db *sqlx.DB, list string, cutoff, now int64, limit int, token string, leaseEnd time.Time) (batch []claimed, record bool, err error)
	// renew extends the claim of token on batch to a lease from the
	// clock's now, if it still holds: held is false when the claim lapsed
	// (end, the last end confirmed, is past) or is gone.
	renew(ctx context.Context, db *sqlx.DB, list, token string, batch []claimed, end time.Time, clock clockwork.Clock, lease time.Duration) (newEnd time.Time, held bool, err error)
	// releaseConflicts frees items of the claim of token to run at next,
	// unless they changed since the claim; now is the processor's, and
	// the claim must hold at it.
	releaseConflicts(ctx context.Context, db *sqlx.DB, list, token string, items []claimed, next, now int64) error
	// releaseUnstarted frees items the claim of token holds and that were
	// not started, and returns how many it released.
	releaseUnstarted(ctx context.Context, db *sqlx.DB, list, token string, items []claimed) (int, error)
	// fail records it, the item c after a failed attempt, while the claim
	// of token holds at now and c is still the row claimed; recorded is
	// false when it was not (the item is then no longer the claim's).
	fail(ctx context.Context, db *sqlx.DB, list, token string, c claimed, it Item, now int64) (recorded bool, err error)
	// settle deletes the done items of a claimed batch and adds them and
	// its failures and parkings to the list's totals, while its lease
	// holds. It returns how many items it deleted, and held false when
	// the lease had ended and nothing but the failures was written.
	settle(ctx context.Context, db *sqlx.DB, s settlement) (removed int, held bool, err error)
	// releaseReadded frees those of ids, the done items of a settled
	// batch the settle did not delete, that a re-add left under the claim.
	releaseReadded(ctx context.Context, db *sqlx.DB, list, token string, ids []string) error

	// pickTx takes up to limit items of list ready at now with the
	// cutoff, in tx, earliest run_at first, in no particular order.
	pickTx(ctx context.Context, tx *sqlx.Tx, list string, cutoff, now int64, limit int) ([]claimed, error)
	// unchangedTx returns the items of batch still as picked in tx.
	unchangedTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed) ([]claimed, error)
	// removeTx deletes the items of batch, still as picked, in tx and
	// returns how many it deleted.
	removeTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed) (int, error)
	// conflictTx sets the items of batch, still as picked, to run at next.
	conflictTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed, next int64) error
	// failTx records it, the item c after a failed attempt, in tx if c is
	// still as picked and no other transaction holds it.
	failTx(ctx context.Context, tx *sqlx.Tx, list string, c claimed, it Item) (recorded bool, err error)
	// hold locks the row of id until ext's transaction ends, where
	// transactions do not exclude each other already.
	hold(ctx context.Context, ext sqlx.ExtContext, list, id string) error
}

// reads are the reads both databases make alike, each with its own
// statements: get (list, ID), due (list, cutoff, now, limit), backlog
// (list, cutoff, now) and the transactional pick (as due), whose rows end
// with the row's version where versioned.
type reads struct {
	getQuery, dueQuery, backlogQuery, pickTxQuery string
	versioned                                     bool
}

func (r reads) get(ctx context.Context, db *sqlx.DB, list, id string) (*sql.Rows, error) {
	return db.QueryContext(ctx, r.getQuery, list, id)
}

func (r reads) due(ctx context.Context, db *sqlx.DB, list string, cutoff, now int64, limit int) (*sql.Rows, error) {
	return db.QueryContext(ctx, r.dueQuery, list, cutoff, now, limit)
}

func (r reads) backlog(ctx context.Context, db *sqlx.DB, list string, cutoff, now int64) (n int, err error) {
	err = db.GetContext(ctx, &n, r.backlogQuery, list, cutoff, now)
	return n, err
}

func (r reads) pickTx(ctx context.Context, tx *sqlx.Tx, list string, cutoff, now int64, limit int) ([]claimed, error) {
	rows, err := tx.QueryContext(ctx, r.pickTxQuery, list, cutoff, now, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	batch := make([]claimed, 0, min(limit, batchPrealloc))
	for rows.Next() {
		var it claimed
		var due, version int64
		dest := []any{&it.ID, &due, &it.Attempts, &it.LastError}
		if r.versioned {
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

// claimed is an item as a batch holds it.
type claimed struct {
	Item
	// version is the row's xmin on PostgreSQL: it tells the row claimed
	// from a later version of the item (see sameRow).
	version uint32
	// ref is the row's place on PostgreSQL (its ctid), which finds it
	// without an index; zero on SQLite.
	ref rowPlace
}

// rowPlace is where a row stood when it was claimed, for a driver that
// finds rows by their physical place: a block and an offset in it.
type rowPlace struct {
	block  uint32
	offset uint16
}

// doneRows are the rows of a claimed batch whose action succeeded, as
// settle needs them: their IDs, places and versions, gathered as the
// actions return rather than copied from the whole items at the end.
type doneRows struct {
	ids      []string
	refs     []rowPlace
	versions []uint32
}

func (d *doneRows) add(c claimed) {
	d.ids = append(d.ids, c.ID)
	d.refs = append(d.refs, c.ref)
	d.versions = append(d.versions, c.version)
}

// settlement is what is left to write of one claimed batch's outcome.
type settlement struct {
	list, token string
	// done are the rows whose action succeeded, to be deleted.
	done doneRows
	// failures and parkings were recorded on the batch's items, and are
	// added to the totals with the deletion.
	failures, parkings int
	// lapse leaves a claim record to lapse rather than deleting it.
	lapse bool
	// holds reports whether the batch's lease holds at the clock's now,
	// and now reads that clock.
	holds func() bool
	now   func() time.Time
}

// manyRows is AddMany's items checked, encoded, without duplicates and
// sorted by ID.
type manyRows struct {
	ids  []string
	dues []int64
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
