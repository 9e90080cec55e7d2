package todolist

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// What a list and its processors ask of one database, as two interfaces:
// listDriver for the list's own writes and reads, batchDriver for a
// processor's claims, leases and settles. Each database's driver
// implements both (driver): every statement in which the databases
// differ. The logic calls them and never asks which database it runs on;
// the statements both databases run alike, and the sqlDriver part both
// drivers embed, are in sql.go, each database's own in its file
// (driver_sqlite.go, driver_postgres.go), the tables in schema.go, and
// driver_test.go runs one contract, both families, against every driver.
//
// Times are passed encoded (sqldb.EncodeTime) where a statement only
// compares them, and as instants where the driver reads the clock itself.

// listDriver is what a [List] asks of its database: adding and removing
// items, reading them back, and holding one in a caller's transaction.
type listDriver interface {
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
	// due reads up to r.limit of r's ready items, as itemColumns, by
	// run_at then ID.
	due(ctx context.Context, db *sqlx.DB, r readyItems) (*sql.Rows, error)
	// pageQuery completes page, a statement reading a page of items as
	// itemColumns ordered by key then ID, so that each item's claim is
	// judged at now, given the tables the database has; args are the
	// placeholders it adds after page's.
	pageQuery(page, key string, tables map[string]bool, list string, now int64) (query string, args []any)
	// hold locks the row of id until ext's transaction ends, where
	// transactions do not exclude each other already.
	hold(ctx context.Context, ext sqlx.ExtContext, list, id string) error
}

// batchDriver is what a [Processor] asks of its database: counting what it
// could take, claiming a batch under a lease, renewing and releasing the
// claim, recording failures and settling the batch's outcome — and, for a
// transactional batch, the same in the transaction that takes it.
type batchDriver interface {
	// backlog counts r's ready items (r.limit is not used).
	backlog(ctx context.Context, db *sqlx.DB, r readyItems) (int, error)

	// claim takes up to r.limit of r's ready items, earliest run_at
	// first, under token with a lease ending at leaseEnd. The items come
	// in no particular order. record reports that the claim left a record
	// that only settle deletes.
	claim(ctx context.Context, db *sqlx.DB, r readyItems, token string, leaseEnd time.Time) (batch []claimed, record bool, err error)
	// renew extends r's claim to a lease from the clock's now, if it
	// still holds: held is false when the claim lapsed (r.end, the last
	// end confirmed, is past) or is gone.
	renew(ctx context.Context, db *sqlx.DB, r renewal) (newEnd time.Time, held bool, err error)
	// releaseConflicts frees items of claim c to run at next, unless they
	// changed since the claim; now is the processor's, and the claim must
	// hold at it.
	releaseConflicts(ctx context.Context, db *sqlx.DB, c claimRef, items []claimed, next, now int64) error
	// releaseUnstarted frees items claim c holds and that were not
	// started, and returns how many it released.
	releaseUnstarted(ctx context.Context, db *sqlx.DB, c claimRef, items []claimed) (int, error)
	// fail records it, the item claimed as item after a failed attempt,
	// while claim c holds at now and item is still the row claimed;
	// recorded is false when it was not (the item is then no longer the
	// claim's).
	fail(ctx context.Context, db *sqlx.DB, c claimRef, item claimed, it Item, now int64) (recorded bool, err error)
	// settle deletes the done items of a claimed batch and adds them and
	// its failures and parkings to the list's totals, while its lease
	// holds. It returns how many items it deleted, and held false when
	// the lease had ended and nothing but the failures was written.
	settle(ctx context.Context, db *sqlx.DB, s settlement) (removed int, held bool, err error)
	// releaseReadded frees those of ids, the done items of a settled
	// batch the settle did not delete, that a re-add left under claim c.
	releaseReadded(ctx context.Context, db *sqlx.DB, c claimRef, ids []string) error

	// pickTx takes up to r.limit of r's ready items in tx, earliest
	// run_at first, in no particular order.
	pickTx(ctx context.Context, tx *sqlx.Tx, r readyItems) ([]claimed, error)
	// unchangedTx returns the items of batch still as picked in tx.
	unchangedTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed) ([]claimed, error)
	// removeTx deletes the items of batch, still as picked, in tx and
	// returns how many it deleted.
	removeTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed) (int, error)
	// conflictTx sets the items of batch, still as picked, to run at next.
	conflictTx(ctx context.Context, tx *sqlx.Tx, list string, batch []claimed, next int64) error
	// failTx records it, the item picked as item after a failed attempt,
	// in tx if item is still as picked and no other transaction holds it.
	failTx(ctx context.Context, tx *sqlx.Tx, list string, item claimed, it Item) (recorded bool, err error)
}

// driver is one database's driver: both families.
type driver interface {
	listDriver
	batchDriver
}

// newDriver picks the driver of q's database: the one place that asks
// which database it is. A third database is a new pair of driver files
// and a line here.
func newDriver(q interface{ DriverName() string }) driver {
	if sqldb.DialectOf(q) == sqldb.Postgres {
		return postgresDriver{sqlDriver{postgresStatements}}
	}
	return sqliteDriver{sqlDriver{sqliteStatements}}
}

// readyItems are the items of list a processor could take at now with the
// cutoff — not parked, due to run by the cutoff, held by no live claim —
// and how many of them a read takes: the placeholders, in this order, of
// every statement that reads them.
type readyItems struct {
	list        string
	cutoff, now int64
	limit       int
}

// claimRef names a claim a processor holds: its list and its token.
type claimRef struct {
	list, token string
}

// renewal asks to extend a claim on batch to a lease of lease from
// clock's now, unless end, the last end confirmed, has passed.
type renewal struct {
	claimRef
	batch []claimed
	end   time.Time
	clock clockwork.Clock
	lease time.Duration
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
	claimRef
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
