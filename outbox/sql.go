package outbox

import (
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// The schema. outbox_records holds what was decided: id orders records
// by insertion, tx by the transaction that inserted them (PostgreSQL's
// transaction id; 0 on SQLite, whose single writer commits in insertion
// order). A relay reads (tx, id) order, and only transactions older than
// every running one (see the package documentation).
//
// outbox_checkpoints holds, per sink, the (tx, id) up to which every
// record is delivered or parked (stream ”), and per stream the last of
// the stream's records delivered or parked. outbox_attempts holds the
// refusals of records not delivered yet, and the parked ones.
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
}}

// queries are one database's statements, in its placeholders.
type queries struct {
	write, parked                 string
	pending, checkpoints, attempt string
	advance, refused, delivered   string
	backlog, waiting              string
}

// recordColumns are a recordRow's, from outbox_records r.
const recordColumns = `r.id, r.tx, r.key, r.stream, r.type, r.body, r.recorded_at`

func queriesFor(d sqldb.Dialect) queries {
	q := queries{
		write: `INSERT INTO outbox_records (key, stream, type, body, recorded_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (key) DO NOTHING`,
		parked: `SELECT ` + recordColumns + `, a.sink, a.attempts, a.last_error
FROM outbox_attempts a JOIN outbox_records r ON r.id = a.record
WHERE a.parked = 1 AND (? = '' OR a.sink = ?) ORDER BY r.tx, r.id, a.sink`,
		// pending reads a page of the records after the sink's checkpoint
		// (tx, id) that no stream checkpoint passed: sink, tx, id, the
		// horizon's condition, limit.
		pending: `SELECT ` + recordColumns + `
FROM outbox_records r
LEFT JOIN outbox_checkpoints c ON c.sink = ? AND c.stream = r.stream
WHERE (r.tx, r.id) > (?, ?) AND %s
	AND (c.sink IS NULL OR (r.tx, r.id) > (c.tx, c.id))
ORDER BY r.tx, r.id LIMIT ?`,
		checkpoints: `SELECT stream, tx, id FROM outbox_checkpoints WHERE sink = ? AND stream = ''`,
		attempt:     `SELECT record, attempts, next_at, parked FROM outbox_attempts WHERE sink = ? AND parked = 0`,
		// advance moves a checkpoint forward, never back: two relays of
		// one sink deliver some records twice but skip none.
		advance: `INSERT INTO outbox_checkpoints (sink, stream, tx, id) VALUES (?, ?, ?, ?)
ON CONFLICT (sink, stream) DO UPDATE SET tx = excluded.tx, id = excluded.id
WHERE (excluded.tx, excluded.id) > (outbox_checkpoints.tx, outbox_checkpoints.id)`,
		refused: `INSERT INTO outbox_attempts (sink, record, attempts, next_at, last_error, parked) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (sink, record) DO UPDATE SET attempts = excluded.attempts, next_at = excluded.next_at,
	last_error = excluded.last_error, parked = excluded.parked`,
		delivered: `DELETE FROM outbox_attempts WHERE sink = ? AND record = ?`,
		// backlog counts what pending would read without the horizon and
		// the limit: sink, tx, id.
		backlog: `SELECT COUNT(*), COALESCE(MIN(r.recorded_at), 0)
FROM outbox_records r
LEFT JOIN outbox_checkpoints c ON c.sink = ? AND c.stream = r.stream
WHERE (r.tx, r.id) > (?, ?) AND (c.sink IS NULL OR (r.tx, r.id) > (c.tx, c.id))`,
		waiting: `SELECT COUNT(*) FROM outbox_attempts WHERE sink = ? AND parked = 0`,
	}
	horizon := `1 = 1` // SQLite: one writer, commits in id order
	if d == sqldb.Postgres {
		// Transactions older than every running one: none can still
		// insert a record below the checkpoint.
		horizon = `r.tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint`
	}
	q.pending = fmt.Sprintf(q.pending, horizon)
	if d == sqldb.Postgres {
		for _, s := range []*string{&q.write, &q.parked, &q.pending, &q.checkpoints, &q.attempt, &q.advance, &q.refused, &q.delivered, &q.backlog, &q.waiting} {
			*s = sqlx.Rebind(sqlx.DOLLAR, *s)
		}
	}
	return q
}
