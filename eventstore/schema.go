package eventstore

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// component is the name the schema's migrations are recorded under.
const component = "eventstore"

// The events table is the whole store. UNIQUE (stream, version) is what
// makes two appenders unable to both win a version, in one process or many,
// whatever else goes wrong. Appenders of one stream also take turns (see
// queries.lock), so the version each reads is the one it inserts after and
// Any or StreamExists never lose a race. position orders all events of all streams for readers that follow
// the store as a whole; on PostgreSQL positions are taken at insert, so a
// transaction that commits later may hold a smaller position.
var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE eventstore_events (
	position    INTEGER PRIMARY KEY AUTOINCREMENT,
	stream      TEXT    NOT NULL,
	version     INTEGER NOT NULL,
	type        TEXT    NOT NULL,
	data        TEXT    NOT NULL,
	recorded_at INTEGER NOT NULL,
	CONSTRAINT eventstore_events_stream_version UNIQUE (stream, version)
)`,
	Postgres: `CREATE TABLE eventstore_events (
	position    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stream      TEXT   NOT NULL,
	version     BIGINT NOT NULL,
	type        TEXT   NOT NULL,
	data        JSONB  NOT NULL,
	recorded_at BIGINT NOT NULL,
	CONSTRAINT eventstore_events_stream_version UNIQUE (stream, version)
)`,
}}

// queries holds the store's SQL, bound once to the database's placeholders.
type queries struct {
	// lock makes the appenders of one stream take turns until their
	// transactions end, so an appender reads the version it will append
	// after. It is empty on SQLite, where an immediate transaction already
	// holds the database's only write lock. On PostgreSQL it is a
	// transaction-scoped advisory lock on a hash of the stream name: it
	// works in the caller's transaction too (AppendTx), where a lost race
	// could not be retried, and it costs one round trip. A hash collision
	// only makes two streams take turns.
	lock    string
	version string
	insert  string
	load    string
}

func newQueries(db *sqlx.DB) queries {
	var lock string
	if sqldb.DialectOf(db) == sqldb.Postgres {
		lock = db.Rebind(`SELECT pg_advisory_xact_lock(hashtextextended('eventstore/' || ?::text, 0))`)
	}
	return queries{
		lock:    lock,
		version: db.Rebind(`SELECT COALESCE(MAX(version), 0) FROM eventstore_events WHERE stream = ?`),
		insert:  db.Rebind(`INSERT INTO eventstore_events (stream, version, type, data, recorded_at) VALUES (?, ?, ?, ?, ?) RETURNING position`),
		load:    db.Rebind(`SELECT position, version, type, data, recorded_at FROM eventstore_events WHERE stream = ? AND version >= ? ORDER BY version`),
	}
}

// isUniqueViolation reports whether err is the database refusing a second
// row for one (stream, version): another appender won the race.
func isUniqueViolation(err error) bool {
	var lite sqlite3.Error
	if errors.As(err, &lite) {
		return lite.ExtendedCode == sqlite3.ErrConstraintUnique || lite.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505" // unique_violation
	}
	return false
}
