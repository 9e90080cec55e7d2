package eventstore

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// driver is one database's statements for the store. The logic (append,
// load, turns) calls it and never asks which database it is on; the
// statements both databases run alike are in sql.go, each database's own
// in its file (driver_sqlite.go, driver_postgres.go), the table in
// schema.go, and driver_test.go holds every driver to this contract. Methods taking a tx run in it; a q may be the store's
// database or a caller's transaction.
type driver interface {
	// takeTurn makes stream's other appenders wait until tx ends, so the
	// version tx reads next is the one its events go after. A hash
	// collision between two names only makes their streams take turns.
	takeTurn(ctx context.Context, tx *sqlx.Tx, stream string) error
	// takeTurns takes the turns of all of streams, in an order every
	// caller follows, so two batches sharing streams wait for each other
	// instead of deadlocking.
	takeTurns(ctx context.Context, tx *sqlx.Tx, streams []string) error
	// tryTurns takes, without waiting, the turns of those of streams that
	// no other transaction holds, and returns the others (each once). A
	// turn tx holds already is taken again at once.
	tryTurns(ctx context.Context, tx *sqlx.Tx, streams []string) (busy []string, err error)

	// version returns the version of stream's last event, 0 for none.
	version(ctx context.Context, q sqlx.QueryerContext, stream string) (int64, error)
	// versions returns the version of each of streams, in one statement;
	// every stream asked for has an entry.
	versions(ctx context.Context, tx *sqlx.Tx, streams []string) (map[string]int64, error)

	// insert stores one event and returns its position. A version the
	// stream has already is refused with an error isUniqueViolation
	// recognises, and nothing is stored.
	insert(ctx context.Context, tx *sqlx.Tx, e eventRow, at int64) (position int64, err error)
	// insertChunk is how many rows one insertMany may be given.
	insertChunk() int
	// insertMany stores rows (at most insertChunk) in one statement, all
	// recorded at at, and returns rows of (stream, version, position) in
	// no particular order.
	insertMany(ctx context.Context, tx *sqlx.Tx, rows []eventRow, at int64) (*sqlx.Rows, error)
	// isUniqueViolation reports whether err is the database refusing a
	// second row for one (stream, version): another appender won.
	isUniqueViolation(err error) bool

	// load returns rows of (position, version, type, data, recorded_at)
	// of stream's events from version from on, in version order.
	load(ctx context.Context, q sqlx.QueryerContext, stream string, from int64) (*sqlx.Rows, error)
	// loadMany returns rows of (stream, position, version, type, data,
	// recorded_at) of the events of streams, in (stream, version) order.
	loadMany(ctx context.Context, q sqlx.QueryerContext, streams []string) (*sqlx.Rows, error)
}

// eventRow is one event to insert.
type eventRow struct {
	stream  string
	version int64
	typ     string
	data    string
}

// newDriver picks db's driver, once, when the store opens. A third
// database is a new pair of driver files and a line here.
func newDriver(db *sqlx.DB) driver {
	if sqldb.DialectOf(db) == sqldb.Postgres {
		return postgresDriver{sqlDriver{postgresStatements}}
	}
	return sqliteDriver{sqlDriver{sqliteStatements}}
}
