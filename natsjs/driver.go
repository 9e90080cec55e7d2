package natsjs

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// driver is one database's statements for the inbox. Inbox and Once call
// it and never ask which database they are on; the statements both
// databases run alike are in sql.go, each database's own in its file
// (driver_sqlite.go, driver_postgres.go), the tables in schema.go, and
// driver_test.go holds every driver to this contract.
type driver interface {
	// record inserts (consumer, id) in tx, handled at at, unless the inbox
	// holds it already, and reports whether it was new. While another
	// transaction has inserted the same pair and not ended, record waits
	// for it: false once it commits, true when it rolled back.
	record(ctx context.Context, tx *sqlx.Tx, consumer, id string, at int64) (fresh bool, err error)
	// handled reports whether the inbox holds (consumer, id).
	handled(ctx context.Context, q sqlx.QueryerContext, consumer, id string) (bool, error)
	// forget deletes consumer's rows handled before before and returns
	// how many.
	forget(ctx context.Context, db sqlx.ExecerContext, consumer string, before int64) (int64, error)
}

// newDriver picks db's driver, once, when the inbox opens. A third
// database is a new pair of driver files and a line here.
func newDriver(db *sqlx.DB) driver {
	if sqldb.DialectOf(db) == sqldb.Postgres {
		return sqlDriver{q: postgresStatements}
	}
	return sqlDriver{q: sqliteStatements}
}
