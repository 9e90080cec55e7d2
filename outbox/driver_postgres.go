package outbox

import "github.com/jmoiron/sqlx"

// The PostgreSQL outbox. Ids are taken at insert, not at commit, so a
// record can commit after one with a higher id was read. Each record
// keeps its transaction's id (tx, xid8 as a bigint), records are read in
// (tx, id) order, and only those of transactions older than every one
// still running: none of those can still add a record below the
// checkpoint.

// postgresStatements read up to the horizon of the oldest transaction
// still running, in $n placeholders.
var postgresStatements = portable(dialect{
	horizon: `r.tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint`,
	after:   `(r.tx, r.id) > (?, ?)`,
	upTo:    `(r.tx, r.id) <= (?, ?)`,
	order:   `r.tx, r.id`,
	last:    `r.tx DESC, r.id DESC`,
}).rebind(sqlx.DOLLAR)

// postgresSchema is sqliteSchema's, each record's tx taken from the
// writing transaction and an index for the (tx, id) order (row values
// compared on it are an index range).
const postgresSchema = `CREATE TABLE outbox_records (
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
);`

// postgresStreamIndex serves a lane's reads of its own stream
// (streamRecords) as a range of the index, not a scan of the stream's
// records from its first. CREATE INDEX (not CONCURRENTLY, which cannot
// run in the migration's transaction) holds off writers while it builds:
// seconds on an outbox of millions of records, once; an operator who
// built it CONCURRENTLY beforehand (docs/postgres.md) finds it kept.
const postgresStreamIndex = `CREATE INDEX IF NOT EXISTS outbox_records_stream ON outbox_records (stream, tx, id)`
