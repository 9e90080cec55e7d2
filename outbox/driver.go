package outbox

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// driver is one database's storage of the outbox. The outbox and its
// relays call it and never ask which database they are on; the statements
// are written once in sql.go, each database's dialect of them (the horizon
// above all) in its file (driver_sqlite.go, driver_postgres.go), the
// tables in schema.go, and driver_test.go holds every driver to this
// contract. Records are ordered by (tx, id) (see the package
// documentation); a position is such a pair.
type driver interface {
	// write stores r in ext, the deciding transaction, at the instant at;
	// a key stored already is left as it was.
	write(ctx context.Context, ext sqlx.ExtContext, r Record, at int64) error
	// records returns, in (tx, id) order, up to limit records after from
	// whose stream's checkpoint for sink does not pass them, written by
	// transactions none of which can still be running: a record that
	// commits later must come after every position records returned.
	// Each carries sink's refusals of it (none for a parked one).
	records(ctx context.Context, sink string, from position, limit int) ([]recordRow, error)
	// streamRecords is records for one stream: up to limit of stream's
	// records after both from and the stream's checkpoint for sink, in
	// (tx, id) order, with the same horizon.
	streamRecords(ctx context.Context, sink, stream string, from position, limit int) ([]recordRow, error)
	// checkpoint returns sink's checkpoint, the zero position for none.
	checkpoint(ctx context.Context, sink string) (position, error)
	// advance moves the checkpoint of sink's stream ("" for the sink's
	// own) to to, never back.
	advance(ctx context.Context, sink, stream string, to position) error
	// settle records that sink is done with each record given (taken or
	// parked): its stream's checkpoint moves to it, never back, and its
	// refusals are forgotten when cleared says so. Several records of one
	// stream may be given.
	settle(ctx context.Context, sink string, done []settled) error
	// backlog counts what records would return after from without the
	// horizon and the limit, and the oldest of them's recorded_at (0 for
	// none).
	backlog(ctx context.Context, sink string, from position) (count int, oldest int64, err error)

	// known reports whether the outbox has seen sink: it has a
	// checkpoint or a refusal stored.
	known(ctx context.Context, sink string) (bool, error)
	// startAt is where a sink starting from the instant at (encoded)
	// begins: just before the first record, in (tx, id) order, recorded
	// at or after at, or after the last record if none is, of the
	// records no transaction still running can precede (the horizon), so
	// that every record committed later comes after it.
	startAt(ctx context.Context, at int64) (position, error)
	// claim stores at as the checkpoint of sink, unless the outbox has
	// seen sink (a checkpoint or a refusal): it reports whether it did.
	claim(ctx context.Context, sink string, at position) (bool, error)
	// countUpTo counts the records at or before at.
	countUpTo(ctx context.Context, at position) (int, error)

	// pruneBound is the lowest of every sink's checkpoint (the zero
	// position for a sink with refusals or stream checkpoints only);
	// none when the outbox knows no sink.
	pruneBound(ctx context.Context) (position, bool, error)
	// prune deletes up to limit records after from and at or before
	// bound, recorded before before, the first in (tx, id) order, and
	// returns how many it deleted and the last one's position.
	prune(ctx context.Context, from, bound position, before int64, limit int) (int, position, error)
	// sweepAttempts deletes the refusals of records no longer held.
	sweepAttempts(ctx context.Context) error
	// forget deletes sink's checkpoints and refusals.
	forget(ctx context.Context, sink string) error
	// size counts the records held and the oldest one's recorded_at (0
	// for none).
	size(ctx context.Context) (count int, oldest int64, err error)

	// refused stores sink's refusal r of a record; parked ones stay.
	refused(ctx context.Context, sink string, r refusal) error
	// delivered forgets sink's refusals of record.
	delivered(ctx context.Context, sink string, record int64) error
	// waiting counts sink's refusals of records not parked.
	waiting(ctx context.Context, sink string) (int, error)
	// parked lists the records sink parked ("" for every sink's), oldest
	// first.
	parked(ctx context.Context, sink string) ([]parkedRow, error)
}

// position is a record's place in delivery order.
type position struct {
	Tx int64 `db:"tx"`
	ID int64 `db:"id"`
}

// before reports whether p comes before q in delivery order.
func (p position) before(q position) bool {
	return p.Tx < q.Tx || p.Tx == q.Tx && p.ID < q.ID
}

// justBefore is the last position before p: every position before p is
// at or before it, so a checkpoint there passes all of them and not p.
func (p position) justBefore() position { return position{p.Tx, p.ID - 1} }

// settled is a record a sink is done with, for settle.
type settled struct {
	stream  string
	at      position
	cleared bool // the record had refusals: forget them
}

// parkedRow is a parked record as read back.
type parkedRow struct {
	recordRow
	Sink      string `db:"sink"`
	Attempts  int    `db:"attempts"`
	LastError string `db:"last_error"`
}

// refusal is a sink's refusal of a record, as refused stores it.
type refusal struct {
	record    int64 // the record's id
	attempts  int   // the sink's attempts so far
	nextAt    int64 // when it may be offered again (encoded)
	lastError string
	parked    bool // the last attempt: the record is parked
}

// recordRow is a record as read back.
type recordRow struct {
	Position   int64  `db:"id"`
	Tx         int64  `db:"tx"`
	Key        string `db:"key"`
	Stream     string `db:"stream"`
	Type       string `db:"type"`
	Body       []byte `db:"body"`
	RecordedAt int64  `db:"recorded_at"`
	// RetryAttempts counts the sink's refusals of the record so far
	// (records and streamRecords only), RetryNextAt when it may be offered
	// again (0 for none).
	RetryAttempts int   `db:"retry_attempts"`
	RetryNextAt   int64 `db:"retry_next_at"`
}

// at is the record's position.
func (r recordRow) at() position { return position{r.Tx, r.Position} }

// newDriver picks db's driver, once, when the outbox opens. A third
// database is a new pair of driver files and a line here.
func newDriver(db *sqlx.DB) driver {
	if sqldb.DialectOf(db) == sqldb.Postgres {
		return &sqlDriver{db: db, q: postgresStatements}
	}
	return &sqlDriver{db: db, q: sqliteStatements}
}
