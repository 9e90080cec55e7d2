package outbox

import "github.com/passage-of-time/passage/internal/sqldb"

// component is the name the schema's migrations are recorded under.
const component = "outbox"

// migrations create the outbox's tables. outbox_records holds what was
// decided, id orders records by insertion; on PostgreSQL each record also
// keeps its writing transaction's id (tx; always 0 on SQLite, whose one
// writer commits in id order), and an index serves the (tx, id) order
// (row values compared on it are an index range). outbox_checkpoints
// holds, per sink, the (tx, id) up to which every record is delivered or
// parked (the empty stream), and per stream the last of the stream's
// records delivered or parked. outbox_attempts holds the refusals of
// records not delivered yet, and the parked ones.
var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE outbox_records (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	tx          INTEGER NOT NULL DEFAULT 0,
	key         TEXT    NOT NULL UNIQUE,
	stream      TEXT    NOT NULL,
	type        TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	recorded_at INTEGER NOT NULL
);
CREATE TABLE outbox_checkpoints (
	sink   TEXT    NOT NULL,
	stream TEXT    NOT NULL,
	tx     INTEGER NOT NULL,
	id     INTEGER NOT NULL,
	PRIMARY KEY (sink, stream)
);
CREATE TABLE outbox_attempts (
	sink       TEXT    NOT NULL,
	record     INTEGER NOT NULL,
	attempts   INTEGER NOT NULL,
	next_at    INTEGER NOT NULL,
	last_error TEXT    NOT NULL,
	parked     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (sink, record)
);`,
	Postgres: `CREATE TABLE outbox_records (
	id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tx          BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
	key         TEXT   NOT NULL UNIQUE,
	stream      TEXT   NOT NULL,
	type        TEXT   NOT NULL,
	body        BYTEA  NOT NULL,
	recorded_at BIGINT NOT NULL
);
CREATE INDEX outbox_records_order ON outbox_records (tx, id);
CREATE TABLE outbox_checkpoints (
	sink   TEXT   NOT NULL,
	stream TEXT   NOT NULL,
	tx     BIGINT NOT NULL,
	id     BIGINT NOT NULL,
	PRIMARY KEY (sink, stream)
);
CREATE TABLE outbox_attempts (
	sink       TEXT    NOT NULL,
	record     BIGINT  NOT NULL,
	attempts   INTEGER NOT NULL,
	next_at    BIGINT  NOT NULL,
	last_error TEXT    NOT NULL,
	parked     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (sink, record)
);`,
}, {
	// A lane reading its own stream again (Run) reads a range of this
	// index (stream = ? AND tx = ? AND id > ? on SQLite) instead of a
	// scan of the stream's records from its first; so does nothing else.
	// The same on both databases. On PostgreSQL, CREATE INDEX (not
	// CONCURRENTLY, which cannot run in the migration's transaction)
	// holds off writers while it builds: seconds on an outbox of millions
	// of records, once; an operator who built it CONCURRENTLY beforehand
	// (docs/postgres.md) finds it kept.
	Version: 2,
	SQLite:  `CREATE INDEX IF NOT EXISTS outbox_records_stream ON outbox_records (stream, tx, id)`,
}}
