package tick

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// driver is one database's storage of the cursors and the lease, for
// [SQLStore]. The store calls it and never asks which database it is on;
// the statements both databases run alike are in sql.go, each database's
// own in its file (driver_sqlite.go, driver_postgres.go), the tables in
// schema.go, and driver_test.go holds every driver to this contract.
// Instants are sqldb.EncodeTime values.
type driver interface {
	// cursor returns unit's cursor; ok is false when the unit has none.
	cursor(ctx context.Context, unit Unit) (boundary int64, ok bool, err error)
	// createCursor gives unit its first cursor, to. moved is false when
	// the unit has one already or, when term is not zero, term is not the
	// lease's: then nothing changed. The checks and the write are one
	// statement, so a replica that lost the lease in between cannot slip
	// through.
	createCursor(ctx context.Context, unit Unit, to, term int64) (moved bool, err error)
	// moveCursor moves unit's cursor from from to to: the compare-and-swap
	// of createCursor, on a cursor that must stand on from.
	moveCursor(ctx context.Context, unit Unit, from, to, term int64) (moved bool, err error)
	// cursors returns every unit's cursor.
	cursors(ctx context.Context) (map[Unit]int64, error)

	// acquireLease gives holder the lease until expires when it is free,
	// expired at now or holder's already, with a new term when it changes
	// hands and the same term when holder renews, and returns the lease as
	// it stands afterwards, atomically.
	acquireLease(ctx context.Context, holder string, now, expires int64) (leaseRow, error)
	// releaseLease empties the lease's holder and end when holder holds
	// it at term, keeping the term; otherwise it does nothing.
	releaseLease(ctx context.Context, holder string, term int64) error
	// lease returns the lease, the zero leaseRow when none was taken.
	lease(ctx context.Context) (leaseRow, error)
}

// leaseRow is the lease as stored.
type leaseRow struct {
	Holder  string `db:"holder"`
	Term    int64  `db:"term"`
	Expires int64  `db:"expires_at"`
}

// leaseName keys the single lease row; the column leaves room for several
// independent ticker groups in one database later.
const leaseName = "ticker"

// newDriver picks db's driver, once, when the store opens. A third
// database is a new pair of driver files and a line here.
func newDriver(db *sqlx.DB) driver {
	if sqldb.DialectOf(db) == sqldb.Postgres {
		return &sqlDriver{db: db, q: postgresStatements}
	}
	return &sqlDriver{db: db, q: sqliteStatements}
}
